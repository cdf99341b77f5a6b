package host

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SandboxPath is the PATH of every plugin process, and the only PATH an
// interpreter named by "#!/usr/bin/env NAME" is looked up in: the
// caller's PATH never decides what runs in the sandbox.
const SandboxPath = "/usr/local/bin:/usr/bin:/bin"

// maxShebang is the kernel's limit on a "#!" line (BINPRM_BUF_SIZE).
const maxShebang = 256

// Command is how the host starts an entrypoint: Argv (before the
// manifest's args) and Exec, the only files a plugin that may not spawn is
// allowed to execute (sandbox.Spec.ExecOnly).
type Command struct {
	Argv []string
	Exec []string
}

// EntryCommand returns the command that starts the entrypoint at the
// absolute host path entry. A "#!" script is not handed to the kernel:
// its interpreter is resolved here, on the host, and executed directly
// (argv = interpreter, its "#!" arguments, entry), so that Exec is exactly
// the interpreter's real path, its ELF interpreter and entry — never
// /usr/bin/env and whatever it would start. It understands
// "#!/usr/bin/env NAME", "#!/usr/bin/env -S NAME ARGS..." (words split
// at blanks; quotes, backslashes and $ are refused rather than guessed)
// and absolute interpreters ("#!/usr/bin/python3 -u", the rest of the
// line one argument, as the kernel passes it). NAME is looked up in
// [SandboxPath]. An interpreter that is itself a script is resolved the
// same way, four levels at most, like the kernel. Any other file (an ELF
// program) runs as itself, with its ELF interpreter in Exec.
func EntryCommand(entry string) (Command, error) {
	return entryCommand(entry, 0)
}

func entryCommand(entry string, depth int) (Command, error) {
	line, ok, err := readShebang(entry)
	if err != nil {
		return Command{}, err
	}
	if !ok {
		return Command{Argv: []string{entry}, Exec: append([]string{entry}, elfInterp(entry)...)}, nil
	}
	if depth >= 4 {
		return Command{}, fmt.Errorf("%s: more than four levels of #! interpreters", entry)
	}
	name, args, err := parseShebang(line)
	if err != nil {
		return Command{}, fmt.Errorf("%s: #!%s: %w", entry, line, err)
	}
	interp, err := findInterpreter(name)
	if err != nil {
		return Command{}, fmt.Errorf("%s: #!%s: %w", entry, line, err)
	}
	ic, err := entryCommand(interp, depth+1)
	if err != nil {
		return Command{}, err
	}
	argv := append(append(ic.Argv, args...), entry)
	return Command{Argv: argv, Exec: append(ic.Exec, entry)}, nil
}

// readShebang returns the "#!" line of the file at p (without "#!" and
// the line end), and whether it has one.
func readShebang(p string) (string, bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	buf := make([]byte, maxShebang)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return "", false, err
	}
	buf = buf[:n]
	if !bytes.HasPrefix(buf, []byte("#!")) {
		return "", false, nil
	}
	line, _, found := bytes.Cut(buf[2:], []byte("\n"))
	if !found && n == maxShebang {
		return "", false, fmt.Errorf("%s: the #! line is longer than %d bytes", p, maxShebang)
	}
	return string(bytes.TrimSuffix(line, []byte("\r"))), true, nil
}

// parseShebang splits a "#!" line (without "#!") into the interpreter to
// find — an absolute path, or a bare NAME after /usr/bin/env — and its
// arguments.
func parseShebang(line string) (name string, args []string, err error) {
	line = strings.Trim(line, " \t")
	interp, rest := line, ""
	if i := strings.IndexAny(line, " \t"); i >= 0 {
		interp, rest = line[:i], strings.Trim(line[i+1:], " \t")
	}
	switch {
	case interp == "":
		return "", nil, errors.New("no interpreter")
	case !filepath.IsAbs(interp):
		return "", nil, errors.New("the interpreter is not an absolute path")
	case filepath.Base(interp) != "env":
		if rest != "" {
			args = []string{rest} // the kernel passes the rest as one argument
		}
		return interp, args, nil
	}
	// /usr/bin/env: a NAME, or -S and words.
	var words []string
	switch s, split := strings.CutPrefix(rest, "-S"); {
	case split:
		if strings.ContainsAny(s, "\"'\\$") {
			return "", nil, errors.New("env -S with quotes, escapes or variables is not supported; use plain words")
		}
		words = strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
	case strings.ContainsAny(rest, " \t"):
		return "", nil, errors.New("env without -S takes one word (the kernel passes the rest as one argument)")
	case rest != "":
		words = []string{rest}
	}
	if len(words) == 0 {
		return "", nil, errors.New("env names no program")
	}
	name = words[0]
	switch {
	case strings.HasPrefix(name, "-"):
		return "", nil, fmt.Errorf("env option %q is not supported", name)
	case strings.Contains(name, "="):
		return "", nil, fmt.Errorf("env variable assignment %q is not supported; use the manifest's env", name)
	case strings.Contains(name, "/") && !filepath.IsAbs(name):
		return "", nil, fmt.Errorf("env program %q is a relative path", name)
	}
	return name, words[1:], nil
}

// findInterpreter returns the real path of the interpreter name: an
// absolute path as it is, a bare name looked up in SandboxPath (never the
// caller's PATH). It must be an executable regular file.
func findInterpreter(name string) (string, error) {
	cands := []string{name}
	if !filepath.IsAbs(name) {
		cands = nil
		for _, dir := range filepath.SplitList(SandboxPath) {
			cands = append(cands, filepath.Join(dir, name))
		}
	}
	for _, c := range cands {
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return real, nil
		}
	}
	if filepath.IsAbs(name) {
		if _, err := os.Lstat(name); errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("its interpreter %s does not exist on this host", name)
		}
		return "", fmt.Errorf("interpreter %s is not an executable file", name)
	}
	return "", fmt.Errorf("%s not found in the sandbox's PATH (%s)", name, SandboxPath)
}
