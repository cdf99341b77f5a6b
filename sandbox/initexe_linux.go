//go:build linux && !norma_init

package sandbox

import _ "embed"

// The slim init (command initexe), built static and reproducibly. The
// build flags here and in TestEmbeddedInitIsCurrent must agree; that test
// fails when the embedded copy is not what the sources build.
//
//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -buildvcs=false -tags norma_init "-ldflags=-s -w -buildid=" -o initexe/norma-sandbox-init ./initexe

//go:embed initexe/norma-sandbox-init
var initExe []byte
