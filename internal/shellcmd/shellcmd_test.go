package shellcmd

import (
	"slices"
	"strings"
	"testing"

	"github.com/norma-run/norma/internal/command"
)

func TestParseShell(t *testing.T) {
	tests := []struct {
		cmd     string
		spawns  [][]string
		writes  []string
		unknown bool
	}{
		{"git status", [][]string{{"git", "status"}}, nil, false},
		{"a && b || c; d | e", [][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}, nil, false},
		{"echo hi > out.txt 2>&1", [][]string{{"echo", "hi"}}, []string{"out.txt"}, false},
		{"cat < in >> log &> all", [][]string{{"cat"}}, []string{"log", "all"}, false},
		{"sudo -u root nice -n 3 rm x", [][]string{{"sudo", "-u", "root", "nice", "-n", "3", "rm", "x"}, {"nice", "-n", "3", "rm", "x"}, {"rm", "x"}}, nil, false},
		{"X=1 ls", [][]string{{"X=1", "ls"}, {"ls"}}, nil, false},
		{"ls $DIR", [][]string{{"ls", dynamicWords}}, nil, false},
		{`ls "$DIR"`, [][]string{{"ls", dynamicWord}}, nil, false},
		{"ls *.go", [][]string{{"ls", command.Glob("*.go")}}, nil, false},
		{"$CMD x", [][]string{{dynamicWords, "x"}}, nil, true},
		{"echo > $F", [][]string{{"echo"}}, nil, true},
		{"if", nil, nil, true},
	}
	for _, tt := range tests {
		got := Parse(tt.cmd)
		if !slices.EqualFunc(got.Spawns, tt.spawns, slices.Equal) || !slices.Equal(got.Writes, tt.writes) || (got.Unknown != "") != tt.unknown {
			t.Errorf("Parse(%q) = spawns %q writes %q unknown %q; want %q %q %v", tt.cmd, got.Spawns, got.Writes, got.Unknown, tt.spawns, tt.writes, tt.unknown)
		}
	}
}

// FuzzParseShell: the parser never panics, and a command containing rm
// as a plain word in command position is always seen.
func FuzzParseShell(f *testing.F) {
	for _, s := range []string{
		"git status",                 // plain
		"a && b; c | d",              // lists and pipes
		"echo $(rm -rf x) `id`",      // substitutions
		"sh -c 'sudo env rm x' > y",  // wrappers and redirect
		"f() { (x); }; f <<< \"$z\"", // functions, here-string
		// the command model (issue 31): pure wrappers and global options
		"timeout 5 nice -n 1 env A=1 git -C . -c core.pager=cat push",
		// arguments the command writes, and pathname patterns
		"cp a protected/c && tee -a x y && dd of=z && sed -i s/a/b/ f && cat secrets/* '*'[!a]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		s := Parse(cmd)
		if s.Unknown != "" {
			return
		}
		// Appending a line "rm x" to a parseable command must add an rm
		// spawn, unless the command continues onto that line (a trailing
		// backslash, a here-document).
		if len(cmd) > 200 || strings.HasSuffix(cmd, `\`) || strings.Contains(cmd, "<<") {
			return
		}
		s2 := Parse(cmd + "\nrm x")
		if s2.Unknown != "" {
			return
		}
		found := false
		for _, a := range s2.Spawns {
			if len(a) > 0 && a[0] == "rm" {
				found = true
			}
		}
		if !found {
			t.Errorf("Parse(%q + rm x) missed rm: %q", cmd, s2.Spawns)
		}
	})
}

func TestArgv(t *testing.T) {
	tests := []struct {
		argv    []string
		spawns  [][]string
		unknown bool
	}{
		{[]string{"git", "status"}, [][]string{{"git", "status"}}, false},
		{[]string{"/usr/bin/rm", "x"}, [][]string{{"/usr/bin/rm", "x"}, {"rm", "x"}}, false},
		{[]string{"sh", "-c", "a; b"}, [][]string{{"sh", "-c", "a; b"}, {"a"}, {"b"}}, false},
		{[]string{"env", "-S", "rm x"}, [][]string{{"env", "-S", "rm x"}}, true},
		// Without a shell, $X is a literal word, not a computed one.
		{[]string{"echo", "$X"}, [][]string{{"echo", "$X"}}, false},
	}
	for _, tt := range tests {
		in := slices.Clone(tt.argv)
		got := Argv(in)
		if !slices.EqualFunc(got.Spawns, tt.spawns, slices.Equal) || (got.Unknown != "") != tt.unknown {
			t.Errorf("Argv(%q) = spawns %q unknown %q; want %q %v", tt.argv, got.Spawns, got.Unknown, tt.spawns, tt.unknown)
		}
		if len(got.Spawns) > 0 && len(in) > 0 {
			got.Spawns[0][0] = "changed"
			if in[0] != tt.argv[0] {
				t.Errorf("Argv(%q) retained its argument", tt.argv)
			}
		}
	}
}

// TestWritesAndGlobs: an argument a command writes is a Name with Access
// Write (cp's destination, tee's files, sed -i's, dd of=), where the
// command is; a pathname pattern is a Glob, quoted characters escaped.
func TestWritesAndGlobs(t *testing.T) {
	for _, tt := range []struct {
		cmd    string
		writes []string // Word@Dir
		globs  []string
	}{
		{cmd: "cp README.md protected/c.txt", writes: []string{"protected/c.txt@."}},
		{cmd: "tee protected/d.txt < x", writes: []string{"protected/d.txt@."}},
		{cmd: "cd sub && sudo tee a b", writes: []string{"a@sub", "b@sub"}},
		{cmd: "dd if=a of=out.bin", writes: []string{"out.bin@."}},
		{cmd: "sed -i s/a/b/ f.txt", writes: []string{"f.txt@."}},
		{cmd: "git -C sub diff --output=x.patch", writes: []string{"x.patch@.,sub"}},
		{cmd: "cat a b"},
		{cmd: "cat secrets/*", globs: []string{"secrets/*@."}},
		{cmd: "cat .e* 'a*'b[!x]", globs: []string{".e*@.", "a\\*b[^x]@."}},
		{cmd: "cat {a,b}* ~/x* $D/*"},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			e := Parse(tt.cmd)
			var writes, globs []string
			for _, n := range e.Names {
				if n.Access == Write {
					var dirs []string
					for _, d := range n.Dirs {
						dirs = append(dirs, d.Path)
					}
					writes = append(writes, n.Word+"@"+strings.Join(dirs, ","))
				}
			}
			for _, n := range e.Globs {
				globs = append(globs, n.Word+"@"+n.Dirs[0].Path)
			}
			if !slices.Equal(writes, tt.writes) || !slices.Equal(globs, tt.globs) {
				t.Errorf("Parse(%q): writes %q, globs %q; want %q, %q", tt.cmd, writes, globs, tt.writes, tt.globs)
			}
		})
	}
}

// TestReadOnly: a command line is read-only when every effect is known
// and a read: its simple commands, its redirections, its arguments.
func TestReadOnly(t *testing.T) {
	for _, tt := range []struct {
		cmd  string
		want bool
	}{
		{"ls", true},
		{"cat README.md | grep -n x | head -3", true},
		{"git status && git log -1", true},
		{"cd sub && ls", true},
		{"cat a > b", false},
		{"cat a >> b", false},
		{"cat a 2>/dev/null", true},
		{"cat < a", true},
		{"ls; rm x", false},
		{"cat $(rm x)", false},
		{"echo $(ls)", false}, // a computed word may be any option
		{"X=1 ls", true},
		{"PATH=/tmp ls", false},
		{"cd $D && ls", false},
		{"eval \"$C\"", false},
		{"find . -exec cat {} +", false},
		{"ls | xargs cat", false},
	} {
		e := Parse(tt.cmd)
		if got := e.ReadOnly(); got != tt.want {
			t.Errorf("Parse(%q).ReadOnly() = %v, want %v (spawns %q, unknown %q)", tt.cmd, got, tt.want, e.Spawns, e.Unknown)
		}
	}
}
