package host

import (
	"reflect"
	"testing"
)

func TestElicitValues(t *testing.T) {
	fields := []ElicitField{
		{Name: "name", Type: "string", Required: true},
		{Name: "ok", Type: "boolean"},
		{Name: "n", Type: "integer"},
		{Name: "x", Type: "number"},
		{Name: "pet", Type: "string", Enum: []string{"cat", "dog"}},
		{Name: "tags", Type: "array"},
	}
	for _, tc := range []struct {
		name  string
		typed map[string]string
		want  map[string]any
		err   string
	}{
		{"all", map[string]string{"name": "Ada", "ok": "yes", "n": "42", "x": "3.5", "pet": "cat", "tags": "a, b"},
			map[string]any{"name": "Ada", "ok": true, "n": int64(42), "x": 3.5, "pet": "cat", "tags": []string{"a", "b"}}, ""},
		{"required only", map[string]string{"name": "Ada"}, map[string]any{"name": "Ada"}, ""},
		{"missing required", map[string]string{"ok": "no"}, nil, "name is required"},
		{"bad boolean", map[string]string{"name": "A", "ok": "maybe"}, nil, "ok must be yes or no"},
		{"bad integer", map[string]string{"name": "A", "n": "4.2"}, nil, "n must be an integer"},
		{"bad number", map[string]string{"name": "A", "x": "many"}, nil, "x must be a number"},
		{"not a choice", map[string]string{"name": "A", "pet": "eel"}, nil, "pet must be one of cat, dog"},
	} {
		got, err := ElicitValues(fields, tc.typed)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %#v, %v", tc.name, got, err)
		}
	}
}
