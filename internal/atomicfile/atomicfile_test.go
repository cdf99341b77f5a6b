package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, body := range []string{"first", "second, longer than the first"} {
		if err := Write(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != body {
			t.Fatalf("read back %q, %v; want %q", b, err, body)
		}
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	// A directory that cannot be written: an error and nothing changed.
	if err := Write(filepath.Join(dir, "missing", "x"), []byte("y"), 0o600); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

func TestReadJSON(t *testing.T) {
	dir := t.TempDir()
	type rec struct {
		Version int               `json:"version"`
		Items   map[string]string `json:"items"`
	}
	for _, tt := range []struct {
		name, content string
		want          error
		items         int
	}{
		{"missing", "", nil, 0},
		{"good", `{"version":1,"items":{"a":"b"}}`, nil, 1},
		{"other version", `{"version":2,"items":{"a":"b"}}`, ErrCorrupt, 0},
		{"no version", `{"items":{"a":"b"}}`, ErrCorrupt, 0},
		{"not json", `{"version":1,`, ErrCorrupt, 0},
		{"wrong type", `{"version":1,"items":[1]}`, ErrCorrupt, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, tt.name+".json")
			if tt.content != "" {
				if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := rec{Version: 1}
			err := ReadJSON(p, 1, &r)
			if !errors.Is(err, tt.want) || (err == nil && len(r.Items) != tt.items) {
				t.Errorf("ReadJSON = %v, %+v; want %v with %d items", err, r, tt.want, tt.items)
			}
		})
	}
}
