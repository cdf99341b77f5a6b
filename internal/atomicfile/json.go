package atomicfile

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
)

// ErrCorrupt: a record file that does not parse, or whose "version" is
// not the one its reader knows.
var ErrCorrupt = errors.New("corrupt")

// ReadJSON reads the JSON record file at path, which Write keeps whole,
// into v. A file that does not exist leaves v as it is (the empty record);
// one whose top-level "version" is not version is ErrCorrupt, as is one
// that does not parse: a record written by another Norma is refused, not
// half read.
func ReadJSON(path string, version int, v any) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var head struct {
		Version int `json:"version"`
	}
	if json.Unmarshal(b, &head) != nil || head.Version != version || json.Unmarshal(b, v) != nil {
		return ErrCorrupt
	}
	return nil
}
