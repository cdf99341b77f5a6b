package shellcmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestNamesDirsRealBash runs real bash on each command in a tree whose
// every file holds its own path, and checks that the file cat printed is
// one the analysis says the word names: Names' directories resolved on
// disk as a caller does (the directory with its links resolved, then the
// word). It is the check that cd, pushd, subshells, links, ~ and $HOME
// move the shell where Names says.
func TestNamesDirsRealBash(t *testing.T) {
	if _, err := os.Stat(bashPath); err != nil {
		t.Skip("no bash")
	}
	root := t.TempDir()
	ws, home := filepath.Join(root, "ws"), filepath.Join(root, "home")
	for _, d := range []string{filepath.Join(ws, "sub", "deep"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/ok.txt", "ws/sub/ok.txt", "ws/sub/deep/ok.txt", "home/ok.txt", "ok.txt"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("sub/deep", filepath.Join(ws, "sublink")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cmd, word string }{
		{"cd sub && cat ../ok.txt", "../ok.txt"},
		{"cd sub; cat ok.txt", "ok.txt"},
		{"cd sub; cd ..; cd sub; cat ../sub/deep/ok.txt", "../sub/deep/ok.txt"},
		{"cd nowhere 2>/dev/null; cat ok.txt", "ok.txt"},
		{"cd sub || true; cat ok.txt", "ok.txt"},
		{"(cd sub); cat ok.txt", "ok.txt"},
		{"{ cd sub; } && cat ok.txt", "ok.txt"},
		{"if cd sub; then cat ok.txt; fi", "ok.txt"},
		{"cd sub && cd deep && cat ../ok.txt", "../ok.txt"},
		{"pushd sub >/dev/null && cat ok.txt", "ok.txt"},
		{"bash -c 'cd sub && cat ../ok.txt'", "../ok.txt"},
		{"cd .. && cat ok.txt", "ok.txt"},
		{"cd sublink && cat ../ok.txt", "../ok.txt"},
		{"cd sublink/.. && cat ok.txt", "ok.txt"},
		{"cd -P sublink/.. && cat ok.txt", "ok.txt"},
		{"cat sublink/../ok.txt", "sublink/../ok.txt"},
		{"cd ~ && cat ok.txt", "ok.txt"},
		{"cd && cat ok.txt", "ok.txt"},
		{"cat ~/ok.txt", "ok.txt"},
		{"cat $HOME/ok.txt", "ok.txt"},
		{`cat "$HOME"/ok.txt`, "ok.txt"},
		{"cd sub && cat < ok.txt", "ok.txt"},
		{"cd " + ws + "/sub && cat ok.txt", "ok.txt"},
		{"env -C sub cat ../ok.txt", "../ok.txt"},
		{"env --chdir=sub/deep cat ../ok.txt", "../ok.txt"},
		{"cd sub && env -C deep bash -c 'cat ../../ok.txt'", "../../ok.txt"},
		{"cd sub && {\ntrue&}&wait; cat ok.txt", "ok.txt"},
		{"cd sub && { true&} && cat ok.txt", "ok.txt"},
		{`cd sub && { true "x&}"; cat ok.txt; }`, "ok.txt"},
		{`cd sub && { true x\&}; cat ok.txt; }`, "ok.txt"},
		{"cd sub && { true }; cat ok.txt; }", "ok.txt"},
	} {
		t.Run(tc.cmd, func(t *testing.T) {
			cmd := exec.Command(bashPath, "--norc", "--noprofile", "-c", tc.cmd)
			cmd.Dir, cmd.Env = ws, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("bash -c %q: %v", tc.cmd, err)
			}
			got := strings.TrimSpace(string(out))
			e := Parse(tc.cmd)
			if e.Unknown != "" || e.DirUnknown != "" {
				t.Fatalf("Parse(%q): Unknown %q DirUnknown %q", tc.cmd, e.Unknown, e.DirUnknown)
			}
			var cands []string
			for _, n := range e.Names {
				if n.Word != tc.word {
					continue
				}
				for _, d := range n.Dirs {
					if p, ok := resolveName(ws, home, d, n); ok {
						rel, _ := filepath.Rel(root, p)
						cands = append(cands, rel)
					}
				}
			}
			if !slices.Contains(cands, got) {
				t.Errorf("bash -c %q printed %s; Names put %q in %v", tc.cmd, got, tc.word, cands)
			}
		})
	}
}

// resolveName is where n, used in d, is for a shell started in ws.
func resolveName(ws, home string, d Dir, n Name) (string, bool) {
	var p string
	switch {
	case n.Home:
		p = home + "/" + n.Word
	case filepath.IsAbs(n.Word):
		p = n.Word
	default:
		base := ws + "/" + d.Path
		if filepath.IsAbs(d.Path) {
			base = d.Path
		} else if d.Home {
			base = home + "/" + d.Path
		}
		dir, err := filepath.EvalSymlinks(base)
		if err != nil {
			return "", false
		}
		p = dir + "/" + n.Word
	}
	r, err := filepath.EvalSymlinks(p)
	return r, err == nil
}

// TestNamesDirs: what Names reports, and which cd commands leave the
// directory unknown.
func TestNamesDirs(t *testing.T) {
	for _, tc := range []struct {
		cmd        string // cmd has no cd with CDPATH lookup unless cdSearch
		word       string
		dirs       []Dir
		dirUnknown bool
		cdSearch   bool
	}{
		{cmd: "cd sub && cat x", word: "x", dirs: []Dir{{Path: "sub"}}, cdSearch: true},
		{cmd: "cd ./sub && cat x", word: "x", dirs: []Dir{{Path: "sub"}}},
		{cmd: "cd ./sub; cat x", word: "x", dirs: []Dir{{Path: "."}, {Path: "sub"}}},
		{cmd: "(cd ./sub); cat x", word: "x", dirs: []Dir{{Path: "."}}},
		{cmd: "cd /usr && cat x", word: "x", dirs: []Dir{{Path: "/usr"}}},
		{cmd: "cd ~/p && cat x", word: "x", dirs: []Dir{{Path: "p", Home: true}}},
		{cmd: "cat x > ../y", word: "../y", dirs: []Dir{{Path: "."}}},
		{cmd: "cd $X && cat x", word: "x", dirUnknown: true},
		{cmd: `cd "$(pwd)/a" && cat x`, word: "x", dirUnknown: true},
		{cmd: "cd - && cat x", word: "x", dirUnknown: true},
		{cmd: "cd a b && cat x", word: "x", dirUnknown: true},
		{cmd: "pushd +1 && cat x", word: "x", dirUnknown: true},
		{cmd: "pushd ./a && popd && cat x", word: "x", dirUnknown: true},
		{cmd: "while true; do cd ./a; done; cat x", word: "x", dirUnknown: true},
		{cmd: "echo | cd ./a; cat x", word: "x", dirUnknown: true},
		{cmd: "f() { cat x; }; cd ./a && f", word: "x", dirUnknown: true},
		{cmd: "eval 'cd ./a'; cat x", word: "x", dirUnknown: true},
		{cmd: "trap 'cd ./a' DEBUG; cat x", word: "x", dirUnknown: true},
		{cmd: "cd ./a & cat x", word: "x", dirs: []Dir{{Path: "."}}},
		// A brace group closed after &: the whole and-or list, cd with
		// it, runs in the background, so what follows stays (bash -c
		// "cd ./zz && {\n0&}&0 0&{ 0\n}" runs `0 0` in .).
		{cmd: "cd ./a && {\nb x&}&cat y", word: "y", dirs: []Dir{{Path: "."}}},
		{cmd: "cd ./a && {\nb x&}&cat y", word: "x", dirs: []Dir{{Path: "a"}}},
		{cmd: "cd ./a && { b x&}; cat y", word: "y", dirs: []Dir{{Path: "."}, {Path: "a"}}},
		{cmd: "cd ./a && { b x&} && cat y", word: "y", dirs: []Dir{{Path: "a"}}},
		{cmd: "cd ./a && { b x; }& cat y", word: "y", dirs: []Dir{{Path: "."}}},
		// Braces and & inside words are no syntax.
		{cmd: `cd ./a && { cat "x&}" y; }`, word: "y", dirs: []Dir{{Path: "a"}}},
		{cmd: `cd ./a && { cat x\&} y; }`, word: "y", dirs: []Dir{{Path: "a"}}},
		{cmd: "cd ./a && { cat x&}y z; }", word: "z", dirs: []Dir{{Path: "a"}}},
		{cmd: "cd ./a && { cat }; cat y; }", word: "y", dirs: []Dir{{Path: "a"}}},
		{cmd: "x=$(cd ./a); cat x", word: "x", dirs: []Dir{{Path: "."}}},
		{cmd: "tar -C ./a -cf - x", word: "x", dirs: []Dir{{Path: "."}, {Path: "./a"}}},
		{cmd: "git -C /r diff x", word: "x", dirs: []Dir{{Path: "."}, {Path: "/r"}}},
		{cmd: "git -C $D status", word: "status", dirUnknown: true},
		{cmd: "sudo --chdir=$D cat x", word: "x", dirUnknown: true},
	} {
		e := Parse(tc.cmd)
		if (e.DirUnknown != "") != tc.dirUnknown || e.CDSearch != tc.cdSearch {
			t.Errorf("Parse(%q): DirUnknown %q CDSearch %v, want unknown %v search %v", tc.cmd, e.DirUnknown, e.CDSearch, tc.dirUnknown, tc.cdSearch)
		}
		if tc.dirUnknown {
			continue
		}
		i := slices.IndexFunc(e.Names, func(n Name) bool { return n.Word == tc.word })
		if i < 0 {
			t.Errorf("Parse(%q): no name %q in %+v", tc.cmd, tc.word, e.Names)
			continue
		}
		if !slices.Equal(e.Names[i].Dirs, tc.dirs) {
			t.Errorf("Parse(%q): %q in %+v, want %+v", tc.cmd, tc.word, e.Names[i].Dirs, tc.dirs)
		}
	}
}

// FuzzNamesDirs: the tracker never panics and every name has a
// directory; it agrees with real bash on where each word is used; and it
// is exact where it can be.
//
// The command runs after `cd ./zz && {` (a brace group it may close
// early, background or leave with a cd of its own); for every program
// bash executes, each argument that Parse lists as a name must have the
// directory bash ran the program in among that name's directories. And a
// command that cannot close the group or move (no "}", no cd, no
// quoting) has every word in zz and nowhere else.
func FuzzNamesDirs(f *testing.F) {
	for _, s := range []string{
		"cat a b",
		"a && b || c; d | e &",
		"(a); { b; } && if c; then d; else e; fi",
		"for x in 1 2; do a x; done; until b; do c; done",
		"case x in y) a;; z) b;; esac > out < in",
		"f() { a; }; f x <(b z)",
		"cat ~/x && sh -c 'a q'",
		// Brace groups closed, backgrounded or chained inside the command.
		"a x&}&b y&{ c z",
		"a x&}; b y; { c z",
		"a x;}& b y; { c z",
		"a x;} && b y; { c z",
		"a x;} || b y; { c z",
		"}; b y; {",
		"a x&}|b y;{ c z",
		// Braces and & inside words, quoted or escaped, are no syntax.
		"a \"x&}\" y; b \"{\" z",
		"a 'x&}&y' z",
		"a x\\&} y",
		"a x&}y z",
		"a }; b y",
		"a { x; b }",
		"a x}&b y",
		// cd within, and other ways a program moves.
		"cd .. && a x; b y",
		"a x & cd .. & b y",
		"env -C .. a x",
		"(cd ..; a x); b y",
	} {
		f.Add(s)
	}
	_, noBash := os.Stat(bashPath)
	f.Fuzz(func(t *testing.T, cmd string) {
		s := Parse(cmd)
		for _, n := range s.Names {
			if len(n.Dirs) == 0 {
				t.Fatalf("Parse(%q): name %q has no directory", cmd, n.Word)
			}
		}
		if len(cmd) > 300 || strings.ContainsRune(cmd, 0) {
			return
		}
		full := "cd ./zz && {\n" + cmd + "\n}"
		s = Parse(full)
		if s.Unknown != "" || s.DirUnknown != "" {
			return
		}
		if !strings.ContainsAny(cmd, "}'\"\\$`") && !strings.Contains(cmd, "cd") && !strings.Contains(cmd, "pushd") &&
			!strings.Contains(cmd, "popd") && !strings.Contains(cmd, "<<") && !strings.Contains(cmd, "-C") && !strings.Contains(cmd, "--") {
			for _, n := range s.Names[1:] {
				if !slices.Equal(n.Dirs, []Dir{{Path: "zz"}}) {
					t.Errorf("Parse(%q): %q in %v, want zz", full, n.Word, n.Dirs)
				}
			}
		}
		// For bash, no expansion may make a word equal to a name of
		// another directory: no parameters, substitutions, globs, brace
		// or sequence expansion.
		if noBash != nil || strings.ContainsAny(cmd, "$`*?[,") || braceSeq.MatchString(cmd) {
			return
		}
		b := getBox(t)
		for _, x := range b.run(t, full, "zz") {
			for _, a := range x.argv[1:] {
				dirs, named := nameDirs(s.Names, a)
				if named && !slices.ContainsFunc(dirs, func(d Dir) bool { return b.sameDir(d, x.dir) }) {
					t.Errorf("bash -c %q ran %q in %s; Parse put %q in %v", full, x.argv, x.dir, a, dirs)
				}
			}
		}
	})
}

// braceSeq matches a sequence expression, {a..c}, which expands a word.
var braceSeq = regexp.MustCompile(`\{[^{}\s]*\.\.[^{}\s]*\}`)

// nameDirs returns the directories of the names with word w that are not
// relative to the home directory, and whether there are any.
func nameDirs(names []Name, w string) ([]Dir, bool) {
	var dirs []Dir
	named := false
	for _, n := range names {
		if n.Word == w && !n.Home {
			named = true
			dirs = append(dirs, n.Dirs...)
		}
	}
	return dirs, named
}

// sameDir reports whether d, as Parse gives it for a command line started
// in the work directory (with $HOME the work directory), is dir, as
// readLogs gives it.
func (b *bashBox) sameDir(d Dir, dir string) bool {
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return filepath.Clean(p)
		}
		return filepath.Join(b.work, p)
	}
	return abs(d.Path) == abs(dir)
}
