package manifest

import (
	"errors"
	"os"
	"testing"
)

func TestExpand(t *testing.T) {
	v := Vars{Package: "/pkg", Data: "/data", Workspace: "/ws", Secret: func(name string) (string, error) {
		if name == "tok" {
			return "norma-ph-tok-123", nil
		}
		return "", errors.New("no placeholder for " + name)
	}}
	tests := []struct {
		name, in, want string
		wantErr        bool
	}{
		{name: "plain", in: "--verbose", want: "--verbose"},
		{name: "dollar without brace is literal", in: "$5 $HOME", want: "$5 $HOME"},
		{name: "every template", in: "${package}/a:${data}/b:${workspace}", want: "/pkg/a:/data/b:/ws"},
		{name: "secret placeholder", in: "Bearer ${secret:tok}", want: "Bearer norma-ph-tok-123"},
		{name: "secret without placeholder", in: "${secret:other}", wantErr: true},
		{name: "unknown", in: "${home}", wantErr: true},
		{name: "unclosed", in: "x${data", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.in, v)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Fatalf("Expand(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
	if _, err := Expand("${data}", Vars{}); err == nil {
		t.Fatal("Expand(${data}) without a data directory succeeded")
	}
}

func TestDiffLaunch(t *testing.T) {
	b, err := os.ReadFile("testdata/manifests/valid/launch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	old, err := Parse("launch.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := Parse("launch.yaml", b)
	if d := Diff(old, same); !d.Empty() {
		t.Fatalf("Diff(same) = %+v, want empty", d)
	}
	changed, _ := Parse("launch.yaml", b)
	changed.Args = append([]string{"--allow-all"}, same.Args...)
	changed.DataDir = false
	d := Diff(old, changed)
	if len(d.Widened) != 1 || d.Widened[0].Kind != "launch" || !d.NeedsConsent() {
		t.Fatalf("Diff(new args) = %+v, want one widened launch change", d)
	}
	if len(d.Removed) != 1 || d.Removed[0].Kind != "data_dir" {
		t.Fatalf("Diff(no data_dir) removed = %+v, want data_dir", d.Removed)
	}
	if got := LaunchLine(old); got != `node_modules/@modelcontextprotocol/server-memory/dist/index.js ${workspace} --verbose [env API_TOKEN=${secret:api_token} MEMORY_FILE_PATH=${data}/memory.jsonl PRICE=$5]` {
		t.Fatalf("LaunchLine = %s", got)
	}
}
