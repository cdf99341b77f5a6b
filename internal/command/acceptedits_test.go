package command_test

import (
	"slices"
	"testing"

	"github.com/norma-run/norma/internal/command"
	"github.com/norma-run/norma/internal/shellcmd"
)

// TestFileOp: the file-system commands the acceptEdits mode runs without
// asking, and what makes one of them ask.
func TestFileOp(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		want bool
	}{
		{"mkdir -p a/b", true},
		{"touch new.txt", true},
		{"rm -rf build", true},
		{"rm -- -x", true},
		{"rmdir empty", true},
		{"mv a.txt b.txt", true},
		{"cp -r src dst", true},
		{"sed -i s/a/b/ f.txt", true},
		{"sed -i -e '/^#/d' f.txt", true},
		{"sed -i.bak -e '/^#/d' f.txt", false},
		{"sed -ie s/a/b/ f.txt", false},
		{"sed -ne 's/x/y/p' f.txt", true},
		// Elsewhere than below the working directory.
		{"rm -rf /tmp/x", false},
		{"rm -rf .", false},
		{"rm -rf ./", false},
		{"rm ../x", false},
		{"cp a/../../x y", false},
		{"cp ~/.ssh/id_rsa k", false},
		{"cp --target-directory=/tmp a", false},
		{"touch -r /etc/passwd x", false},
		{"cp -t /tmp a", false},
		// Computed words and patterns.
		{"rm $X", false},
		{"rm *.log", false},
		{"rm \"$HOME/x\"", false},
		// sed that runs, reads or writes on its own.
		{"sed -i 's/x/y/w out' f", false},
		{"sed -i e f", false},
		{"sed -f script.sed f", false},
		{"sed -nf script.sed f", false},
		{"sed --file=s f", false},
		{"sed -i '1r /etc/passwd' f", false},
		// Options that change which files are written or read (the red
		// team's: abbreviations and bundles of -t, backup suffixes, links,
		// dereferencing, sed's -l, -f, -i with a suffix, --expr).
		{"cp --t .git config", false},
		{"cp --target-dir=.git config", false},
		{"cp -rt .claude settings.local.json", false},
		{"mv --target-dir=.git config", false},
		{"cp -b -S .json a.txt .mcp", false},
		{"cp --backup --suffix=.json a.txt .mcp", false},
		{"mv -b -S .json a.txt .mcp", false},
		{"cp -l .git/config gc", false},
		{"cp -s a b", false},
		{"cp -rL d out", false},
		{"sed -l 5 '1e touch PWNED' a.txt", false},
		{"sed --expr='1e touch PWNED' a.txt", false},
		{"sed --fi=s.sed a.txt", false},
		{"sed -i'.git/*' s/x/x/ config", false},
		{"sed --in-place=.git/* s/x/x/ config", false},
		{"sed -i.json s/x/x/ .mcp", false},
		{"sed -invrc s/x/x/ .e", false},
		{"sed -ni 's/x/y/p' f", true},
		{"touch -r ref f", false},
		{"mkdir -m 700 d", false},
		// Not the table, or not as written.
		{"chmod +x f", false},
		{"ln -s a b", false},
		{"/bin/rm x", false},
		{"sudo rm x", false},
		{"rm", false},
	} {
		e := shellcmd.Parse(tt.cmd)
		if len(e.Spawns) == 0 {
			t.Fatalf("%q: no command", tt.cmd)
		}
		if got := command.FileOp(e.Spawns[0]); got != tt.want {
			t.Errorf("FileOp(%q) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
}

// TestRevPaths: the files git show, cat-file and diff read from the
// repository by a REV:PATH operand.
func TestRevPaths(t *testing.T) {
	for _, tt := range []struct {
		argv []string
		want []string
	}{
		{[]string{"git", "show", "HEAD:.env"}, []string{".env"}},
		{[]string{"git", "-C", ".", "show", "main:./src/../.env"}, []string{".env"}},
		{[]string{"git", "cat-file", "-p", ":0:secrets/k"}, []string{"secrets/k"}},
		{[]string{"git", "cat-file", "blob", ":k"}, []string{"k"}},
		{[]string{"git", "diff", "HEAD:a", "HEAD:b"}, []string{"a", "b"}},
		{[]string{"timeout", "5", "git", "show", "HEAD:x"}, []string{"x"}},
		{[]string{"git", "show", ":/fix the bug"}, nil},
		{[]string{"git", "show", "HEAD^{/i:*}:.env"}, []string{".env"}},
		{[]string{"git", "show", "HEAD@{1:00}:sub/.env"}, []string{"sub/.env"}},
		{[]string{"git", "show", "HEAD:"}, nil},
		{[]string{"git", "show", "HEAD"}, nil},
		{[]string{"git", "log", "HEAD:x"}, nil},
		{[]string{"git", "show", "--format=%H:%s"}, nil},
		{[]string{"cat", "HEAD:x"}, nil},
	} {
		got := command.RevPaths(tt.argv)
		if !slices.Equal(got, tt.want) {
			t.Errorf("RevPaths(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
