package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/secret"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func newSecretCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "secret",
		Short: "Store, list and remove secrets in the encrypted vault (values never on the command line)",
	}
	c.AddCommand(newSecretSetCmd(), newSecretListCmd(), newSecretRmCmd())
	return c
}

// openVault opens the file vault under the state directory and prints the
// key-file warning when this call created the key.
func openVault(cmd *cobra.Command) (*secret.FileVault, error) {
	dir, err := stateDir(cmd)
	if err != nil {
		return nil, exitWith(exitInternal, err)
	}
	v, err := secret.OpenFileVault(cmd.Context(), filepath.Join(dir, "secrets"), nil)
	if err != nil {
		return nil, exitWith(exitInternal, err)
	}
	if v.KeyCreated() {
		fmt.Fprintf(cmd.ErrOrStderr(), "norma: warning: created the vault key file %s (mode 0600).\n"+
			"norma: warning: no OS keyring is used: anyone who can read this file and the vault as your user can decrypt every secret.\n"+
			"norma: warning: keep the state directory private and out of backups you share.\n",
			filepath.Join(dir, "secrets", secret.KeyFileName))
	}
	return v, nil
}

// secretErr maps vault errors to exit codes: bad input 1, vault state 4.
func secretErr(err error) error {
	if capability.ReasonOf(err) == capability.ReasonSecretInvalid || errors.Is(err, secret.ErrNotFound) {
		return exitWith(exitFailed, err)
	}
	return exitWith(exitInternal, err)
}

func newSecretSetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "set NAME",
		Short: "Store a secret; the value is read from a no-echo prompt or from stdin, never from arguments",
		Long: "Store a secret under NAME. On a terminal the value is read from a prompt that does not echo;\n" +
			"otherwise it is read from stdin (one trailing newline is removed). There is deliberately\n" +
			"no flag or argument for the value: argv is visible to every user through /proc.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := secret.CheckName(name); err != nil {
				return exitWith(exitFailed, err)
			}
			raw, err := readSecretValue(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr(), name)
			if err != nil {
				return exitWith(exitFailed, err)
			}
			val := secret.NewValue(raw)
			clear(raw)
			if err := secret.CheckValue(name, val); err != nil {
				return exitWith(exitFailed, err)
			}
			v, err := openVault(cmd)
			if err != nil {
				return err
			}
			if err := v.Set(cmd.Context(), name, val); err != nil {
				return secretErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stored %s (%d bytes)\n", name, val.Len())
			return nil
		},
	}
}

// readSecretValue reads from a no-echo terminal prompt when in is a
// terminal, and all of in otherwise.
func readSecretValue(_ context.Context, in io.Reader, prompt io.Writer, name string) ([]byte, error) {
	if f, ok := in.(*os.File); ok {
		if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			return readNoEcho(f, t, prompt, name)
		}
	}
	b, err := io.ReadAll(io.LimitReader(in, secret.MaxValueLen+2))
	if err != nil {
		return nil, fmt.Errorf("read the value from stdin: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return b, nil
}

func readNoEcho(f *os.File, old *unix.Termios, prompt io.Writer, name string) ([]byte, error) {
	fd := int(f.Fd())
	t := *old
	t.Lflag &^= unix.ECHO
	t.Lflag |= unix.ICANON | unix.ISIG
	t.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil, fmt.Errorf("turn off terminal echo: %w", err)
	}
	defer func() {
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
		fmt.Fprintln(prompt)
	}()
	fmt.Fprintf(prompt, "Value for %s (input is hidden): ", name)
	line, err := bufio.NewReaderSize(f, secret.MaxValueLen+2).ReadSlice('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read the value: %w", err)
	}
	out := bytes.Clone(bytes.TrimRight(line, "\r\n"))
	clear(line)
	return out, nil
}

func newSecretListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List secret names (never values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := openVault(cmd)
			if err != nil {
				return err
			}
			names, err := v.List(cmd.Context())
			if err != nil {
				return secretErr(err)
			}
			if asJSON {
				if names == nil {
					names = []string{}
				}
				return writeJSON(cmd.OutOrStdout(), map[string]any{"names": names})
			}
			for _, n := range names {
				fmt.Fprintln(cmd.OutOrStdout(), n)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, `print {"names": [...]}`)
	return c
}

func newSecretRmCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "rm NAME",
		Aliases: []string{"remove"},
		Short:   "Remove a secret",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := secret.CheckName(args[0]); err != nil {
				return exitWith(exitFailed, err)
			}
			v, err := openVault(cmd)
			if err != nil {
				return err
			}
			if err := v.Delete(cmd.Context(), args[0]); err != nil {
				return secretErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
			return nil
		},
	}
}
