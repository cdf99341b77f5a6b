package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/norma-run/norma/door/mcpadd"
	"github.com/norma-run/norma/internal/atomicfile"
	"github.com/norma-run/norma/internal/termtext"
	"github.com/norma-run/norma/internal/textdiff"
)

// backupSuffix names the copy of a client's file `mcp import --rewrite`
// keeps.
const backupSuffix = ".norma-backup"

// rewriteConfig switches the servers names of the client's file to `norma
// mcp proxy NAME`: it shows the diff, asks on a terminal unless yes,
// keeps a backup and replaces the file atomically. Nothing to change is
// no change.
func rewriteConfig(cmd *cobra.Command, file string, names []string, yes bool) error {
	if len(names) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: %s: no server to rewrite\n", termtext.Escape(file))
		return nil
	}
	self, err := selfExe()
	if err != nil {
		return exitWith(exitInternal, err)
	}
	home, err := proxyHome(cmd)
	if err != nil {
		return err
	}
	argv := map[string][]string{}
	for _, n := range names {
		a := []string{self, "mcp", "proxy", n}
		if home != "" {
			a = append(a, "--home", home)
		}
		argv[n] = a
	}
	st, err := os.Stat(file)
	if err != nil {
		return exitWith(exitFailed, err)
	}
	old, err := os.ReadFile(file)
	if err != nil {
		return exitWith(exitFailed, err)
	}
	cur, err := mcpadd.Rewrite(file, old, argv)
	if err != nil {
		return exitWith(exitFailed, fmt.Errorf("rewrite: %w", err))
	}
	if string(cur) == string(old) {
		return nil
	}
	w := cmd.OutOrStdout()
	if f, _ := cmd.Flags().GetBool("json"); f {
		w = cmd.ErrOrStderr()
	}
	fmt.Fprint(w, termtext.EscapeText(textdiff.Unified(file, file, string(old), string(cur))))
	if !yes {
		if !stdinIsTerminal(cmd.InOrStdin()) {
			return exitWith(exitConsent, fmt.Errorf("rewrite: %s was not changed: confirm on a terminal or pass --yes", file))
		}
		fmt.Fprintf(w, "Rewrite %s so that these servers run through Norma? [y/N] ", termtext.Escape(file))
		var answer string
		fmt.Fscanln(cmd.InOrStdin(), &answer)
		if a := strings.ToLower(answer); a != "y" && a != "yes" {
			return exitWith(exitConsent, fmt.Errorf("rewrite: %s was not changed", file))
		}
	}
	if err := atomicfile.Write(file+backupSuffix, old, st.Mode().Perm()); err != nil {
		return exitWith(exitFailed, fmt.Errorf("rewrite: backup: %w", err))
	}
	if err := atomicfile.Write(file, cur, st.Mode().Perm()); err != nil {
		return exitWith(exitFailed, fmt.Errorf("rewrite: %w", err))
	}
	fmt.Fprintf(w, "rewrote %s (backup: %s)\n", termtext.Escape(file), termtext.Escape(file+backupSuffix))
	return nil
}

// proxyHome is the --home the proxy entries need: the state directory
// when it was chosen (--home or $NORMA_HOME), absolute; "" for the
// default.
func proxyHome(cmd *cobra.Command) (string, error) {
	h, _ := cmd.Flags().GetString("home")
	if h == "" && os.Getenv("NORMA_HOME") == "" {
		return "", nil
	}
	dir, err := stateDir(cmd)
	if err != nil {
		return "", exitWith(exitInternal, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return "", exitWith(exitInternal, err)
	}
	return dir, nil
}
