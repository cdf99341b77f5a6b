//go:build !unix

package secret

import (
	"errors"
	"io/fs"
	"os"
)

const nofollow = 0

// ownedByCurrentUser cannot be checked here: refuse (fail closed).
func ownedByCurrentUser(fs.FileInfo) bool { return false }

func lockFile(*os.File) error { return errors.New("secret: file vault needs a unix system") }

func unlockFile(*os.File) error { return nil }
