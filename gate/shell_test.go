package gate

import (
	"slices"
	"strings"
	"testing"
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
		{"ls $DIR", [][]string{{"ls", dynamicWord}}, nil, false},
		{"ls *.go", [][]string{{"ls", dynamicWord}}, nil, false},
		{"$CMD x", [][]string{{dynamicWord, "x"}}, nil, true},
		{"echo > $F", [][]string{{"echo"}}, nil, true},
		{"if", nil, nil, true},
	}
	for _, tt := range tests {
		got := parseShell(tt.cmd)
		if !slices.EqualFunc(got.spawns, tt.spawns, slices.Equal) || !slices.Equal(got.writes, tt.writes) || (got.unknown != "") != tt.unknown {
			t.Errorf("parseShell(%q) = spawns %q writes %q unknown %q; want %q %q %v", tt.cmd, got.spawns, got.writes, got.unknown, tt.spawns, tt.writes, tt.unknown)
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
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		s := parseShell(cmd)
		if s.unknown != "" {
			return
		}
		// Appending a line "rm x" to a parseable command must add an rm
		// spawn, unless the command continues onto that line (a trailing
		// backslash, a here-document).
		if len(cmd) > 200 || strings.HasSuffix(cmd, `\`) || strings.Contains(cmd, "<<") {
			return
		}
		s2 := parseShell(cmd + "\nrm x")
		if s2.unknown != "" {
			return
		}
		found := false
		for _, a := range s2.spawns {
			if len(a) > 0 && a[0] == "rm" {
				found = true
			}
		}
		if !found {
			t.Errorf("parseShell(%q + rm x) missed rm: %q", cmd, s2.spawns)
		}
	})
}
