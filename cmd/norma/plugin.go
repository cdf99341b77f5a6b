package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/plugin/host"
	"github.com/norma-run/norma/runtime"
	"github.com/spf13/cobra"
)

func newPluginCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "plugin",
		Short: "Sign, verify, trust, install, update and remove plugin packages",
	}
	c.AddCommand(newPluginWrapCmd(), newPluginKeygenCmd(), newPluginPackCmd(), newPluginSignCmd(), newPluginVerifyCmd(),
		newPluginTrustCmd(), newPluginInstallCmd(false), newPluginInstallCmd(true), newPluginConsentCmd(),
		newPluginListCmd(), newPluginInfoCmd(), newPluginUsageCmd(), newPluginRemoveCmd())
	return c
}

// pluginErr maps a plugin error to an exit code: refusals are 1, state
// problems 4.
func pluginErr(err error) error {
	switch capability.ReasonOf(err) {
	case capability.ReasonPluginState:
		return exitWith(exitInternal, err)
	case capability.ReasonPluginConsentRequired:
		return exitWith(exitConsent, err)
	}
	return exitWith(exitFailed, err)
}

// progress prints throttled progress lines on w; nil when quiet or when w
// is not a terminal (its "\r" lines would run into what follows in a log).
func progress(w io.Writer, what string, quiet bool) plugin.Progress {
	if f, ok := w.(*os.File); quiet || !ok || !isTerminal(f) {
		return nil
	}
	// Short work prints nothing; long work prints at most 4 lines a second.
	start := time.Now()
	var last time.Time
	return func(done, total int64) {
		now := time.Now()
		if now.Sub(start) < time.Second || (now.Sub(last) < 250*time.Millisecond && done != total) {
			return
		}
		last = now
		if total > 0 {
			fmt.Fprintf(w, "\r%s %d/%d MiB (%d%%)", what, done>>20, total>>20, done*100/total)
			if done == total {
				fmt.Fprintln(w)
			}
		} else {
			fmt.Fprintf(w, "\r%s %d MiB", what, done>>20)
		}
	}
}

func newPluginKeygenCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "keygen --out NAME",
		Short: "Create an ed25519 publisher key: NAME.key (0600) and NAME.pub",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return exitWith(exitUsage, errors.New("--out NAME is required"))
			}
			pub, priv, err := plugin.GenerateKey()
			if err != nil {
				return exitWith(exitInternal, err)
			}
			if err := plugin.WriteKeyPair(out, priv); err != nil {
				return exitWith(exitFailed, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\n%s.key\n%s.pub\n", plugin.KeyID(pub), out, out)
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "key file name without extension")
	return c
}

func newPluginPackCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "pack DIR -o FILE",
		Short: "Write a reproducible .tar.gz of a package directory",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return exitWith(exitUsage, errors.New("-o FILE is required"))
			}
			f, err := os.CreateTemp(filepath.Dir(out), ".pack-*")
			if err != nil {
				return exitWith(exitFailed, err)
			}
			defer os.Remove(f.Name())
			err = plugin.Pack(cmd.Context(), args[0], f, &plugin.PackOptions{Progress: progress(cmd.ErrOrStderr(), "packing", false)})
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return pluginErr(err)
			}
			if err := os.Rename(f.Name(), out); err != nil {
				return exitWith(exitFailed, err)
			}
			return nil
		},
	}
	c.Flags().StringVarP(&out, "output", "o", "", "archive to write")
	return c
}

func newPluginSignCmd() *cobra.Command {
	var keyFile string
	var coKeys []string
	c := &cobra.Command{
		Use:   "sign DIR --key NAME.key [--co-key OLD.key]",
		Short: "Sign a package directory: writes DIR/package.sig",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyFile == "" {
				return exitWith(exitUsage, errors.New("--key NAME.key is required"))
			}
			key, err := plugin.LoadPrivateKey(keyFile)
			if err != nil {
				return pluginErr(err)
			}
			opts := &plugin.SignOptions{Progress: progress(cmd.ErrOrStderr(), "hashing", false)}
			for _, k := range coKeys {
				ck, err := plugin.LoadPrivateKey(k)
				if err != nil {
					return pluginErr(err)
				}
				opts.CoSigners = append(opts.CoSigners, ck)
			}
			st, err := plugin.Sign(cmd.Context(), args[0], key, opts)
			if err != nil {
				return pluginErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signed %s@%s\nmerkle root %s\nkey %s\n", st.ID, st.Version, st.MerkleRoot, st.Key.ID)
			return nil
		},
	}
	c.Flags().StringVar(&keyFile, "key", "", "private key file")
	c.Flags().StringArrayVar(&coKeys, "co-key", nil, "also sign with this key (the previous key, when rotating)")
	return c
}

// verifyOutput is the --json output of `plugin verify`.
type verifyOutput struct {
	OK             bool     `json:"ok"`
	Reason         string   `json:"reason,omitempty"`
	Error          string   `json:"error,omitempty"`
	ID             string   `json:"id,omitempty"`
	Version        string   `json:"version,omitempty"`
	ManifestDigest string   `json:"manifestDigest,omitempty"`
	MerkleRoot     string   `json:"merkleRoot,omitempty"`
	Signer         string   `json:"signer,omitempty"`
	Publisher      string   `json:"publisher,omitempty"`
	CoSigners      []string `json:"coSigners,omitempty"`
	SignedAt       string   `json:"signedAt,omitempty"`
	Files          int      `json:"files,omitempty"`
}

func newPluginVerifyCmd() *cobra.Command {
	var pubFile string
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify PKG [--pubkey NAME.pub] [--json]",
		Short: "Verify a package directory or archive; exit 0 only when every byte, name, mode and the file set match the signature",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			opts := &plugin.VerifyOptions{Progress: progress(cmd.ErrOrStderr(), "hashing", asJSON)}
			if pubFile != "" {
				k, err := plugin.LoadPublicKey(pubFile)
				if err != nil {
					return pluginErr(err)
				}
				opts.PublicKey = k
			} else {
				home, err := stateDir(cmd)
				if err != nil {
					return exitWith(exitInternal, err)
				}
				ts, err := plugin.OpenTrustStore(filepath.Join(home, "trust"))
				if err != nil {
					return pluginErr(err)
				}
				opts.Trust = ts
			}
			dir := args[0]
			if info, err := os.Stat(dir); err != nil {
				return exitWith(exitFailed, err)
			} else if !info.IsDir() {
				work, err := os.MkdirTemp("", "norma-verify-*")
				if err != nil {
					return exitWith(exitInternal, err)
				}
				defer os.RemoveAll(work)
				dir = filepath.Join(work, "pkg")
				tree, err := plugin.Stage(ctx, args[0], dir, &plugin.UnpackOptions{Progress: progress(cmd.ErrOrStderr(), "unpacking", asJSON)})
				if err != nil {
					return verifyFail(cmd, asJSON, err)
				}
				opts.Tree = tree
			}
			v, err := plugin.Verify(ctx, dir, opts)
			if err != nil {
				return verifyFail(cmd, asJSON, err)
			}
			out := verifyOutput{OK: true, ID: v.Statement.ID, Version: v.Statement.Version, ManifestDigest: v.Statement.ManifestDigest,
				MerkleRoot: v.Statement.MerkleRoot.String(), Signer: v.Signer, Publisher: v.Publisher, CoSigners: v.CoSigners,
				SignedAt: v.Statement.SignedAt.Format(time.RFC3339), Files: len(v.Tree.Files)}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), out)
			}
			who := v.Signer
			if v.Publisher != "" {
				who = v.Publisher + " (" + v.Signer + ")"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "OK %s@%s signed by %s at %s\nmerkle root %s, %d files\n", out.ID, out.Version, who, out.SignedAt, out.MerkleRoot, out.Files)
			return nil
		},
	}
	c.Flags().StringVar(&pubFile, "pubkey", "", "verify against this public key instead of the trust store")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

func verifyFail(cmd *cobra.Command, asJSON bool, err error) error {
	if asJSON {
		writeJSON(cmd.OutOrStdout(), verifyOutput{Reason: string(capability.ReasonOf(err)), Error: errText(err)})
		return exitWith(exitFailed, nil)
	}
	return pluginErr(err)
}

func openTrust(cmd *cobra.Command) (*plugin.TrustStore, string, error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, "", exitWith(exitInternal, err)
	}
	ts, err := plugin.OpenTrustStore(filepath.Join(home, "trust"))
	if err != nil {
		return nil, "", pluginErr(err)
	}
	return ts, home, nil
}

func newPluginTrustCmd() *cobra.Command {
	c := &cobra.Command{Use: "trust", Short: "Manage trusted publisher keys"}
	var publisher string
	var prefixes []string
	add := &cobra.Command{
		Use:   "add KEYFILE --publisher NAME --prefix ID-PREFIX...",
		Short: "Trust a publisher key for plugin ids under the given prefixes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, _, err := openTrust(cmd)
			if err != nil {
				return err
			}
			pub, err := plugin.LoadPublicKey(args[0])
			if err != nil {
				return pluginErr(err)
			}
			k, err := ts.Add(pub, publisher, prefixes, time.Now())
			if err != nil {
				return pluginErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trusted %s (%s) for %s\n", k.ID, k.Publisher, strings.Join(k.Prefixes, ", "))
			return nil
		},
	}
	add.Flags().StringVar(&publisher, "publisher", "", "publisher name")
	add.Flags().StringArrayVar(&prefixes, "prefix", nil, "plugin id prefix this key may sign (repeatable)")
	var asJSON bool
	list := &cobra.Command{
		Use:   "list [--json]",
		Short: "List trusted keys",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ts, _, err := openTrust(cmd)
			if err != nil {
				return err
			}
			keys, err := ts.Keys()
			if err != nil {
				return pluginErr(err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), keys)
			}
			for _, k := range keys {
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  %s\n", k.ID, k.Publisher, strings.Join(k.Prefixes, ","))
			}
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	remove := &cobra.Command{
		Use:   "remove KEY-ID",
		Short: "Stop trusting a key (pins and the rollback table are kept)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ts, _, err := openTrust(cmd)
			if err != nil {
				return err
			}
			if err := ts.Remove(args[0]); err != nil {
				return pluginErr(err)
			}
			return nil
		},
	}
	c.AddCommand(add, list, remove)
	return c
}

// terminalConsent asks on the terminal, one capability group at a time.
type terminalConsent struct {
	in  *bufio.Reader
	out io.Writer
}

func (t *terminalConsent) Ask(_ context.Context, q plugin.Question) ([]string, error) {
	fmt.Fprintf(t.out, "\n%s requests %s:\n", q.Plugin, q.Group)
	for _, it := range q.Requested {
		fmt.Fprintf(t.out, "  %s\n", it)
	}
	if q.Untrusted {
		fmt.Fprintln(t.out, "  (untrusted package: answer n unless you are sure)")
	}
	fmt.Fprint(t.out, "Grant? [y]es all / [n]o / or type narrower items separated by commas: ")
	line, err := t.in.ReadString('\n')
	if err != nil && line == "" {
		return nil, fmt.Errorf("no answer: %w", err)
	}
	line = strings.TrimSpace(line)
	switch strings.ToLower(line) {
	case "y", "yes":
		return q.Requested, nil
	case "n", "no", "":
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(line, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

// manager builds a plugin.Manager wired to the state directory: trust
// store, audit log in the state database, terminal consent.
func manager(cmd *cobra.Command, interactive bool, wsFile string, quiet bool) (*plugin.Manager, func(), error) {
	home, err := stateDir(cmd)
	if err != nil {
		return nil, nil, exitWith(exitInternal, err)
	}
	svcs, err := openServices(cmd, home, runtime.ServicesOptions{})
	if err != nil {
		return nil, nil, err
	}
	db, log := svcs.Store, svcs.Audit
	closer := func() { closeServices(cmd, svcs) }
	o := plugin.Options{Home: home, Audit: log, Out: cmd.OutOrStdout(), Progress: progress(cmd.ErrOrStderr(), "staging", quiet),
		Consents: db, Who: plugin.DefaultWho(), Host: plugin.DefaultHost()}
	if quiet {
		o.Out = io.Discard
	}
	if interactive {
		o.Consenter = &terminalConsent{in: bufio.NewReader(cmd.InOrStdin()), out: cmd.OutOrStdout()}
	}
	if wsFile != "" {
		ws, err := manifest.ParseLayerFile(wsFile)
		if err != nil {
			closer()
			return nil, nil, exitWith(exitFailed, err)
		}
		o.Workspace = ws
	}
	m, err := plugin.NewManager(o)
	if err != nil {
		closer()
		return nil, nil, pluginErr(err)
	}
	return m, closer, nil
}

func loadGrant(yes bool, file string) (*manifest.Layer, error) {
	if yes && file == "" {
		return nil, exitWith(exitUsage, errors.New("--yes requires --grant FILE, so that a headless install is still an explicit consent"))
	}
	if file == "" {
		return nil, nil
	}
	if !yes {
		return nil, exitWith(exitUsage, errors.New("--grant FILE is used with --yes"))
	}
	l, err := manifest.ParseLayerFile(file)
	if err != nil {
		return nil, exitWith(exitFailed, err)
	}
	return l, nil
}

// resultJSON is the --json output of install, update and consent.
type resultJSON struct {
	ID      string              `json:"id"`
	Version string              `json:"version"`
	Held    bool                `json:"held"`
	Widened map[string][]string `json:"widened,omitempty"`
	Delta   *manifest.Delta     `json:"delta,omitempty"`
	Grant   map[string][]string `json:"grant,omitempty"`
}

func printResult(cmd *cobra.Command, asJSON bool, r *plugin.Result, verb string) error {
	out := resultJSON{ID: r.ID, Version: r.Version, Held: r.Held, Widened: groupsJSON(r.Widened)}
	if verb == "updated" {
		out.Delta = &r.Delta
	}
	if r.Grant != nil {
		out.Grant = groupsJSON(plugin.GrantItems(r.Grant.Permissions))
	}
	if asJSON {
		if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	} else if r.Held {
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s installed as HELD: it asks for more than the running version:\n", r.ID, r.Version)
		for _, c := range slices.Concat(r.Delta.Added, r.Delta.Widened) {
			fmt.Fprintf(cmd.OutOrStdout(), "  + %s\n", c)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "The previous version keeps running. Review and accept with: norma plugin consent %s\n", r.ID)
	} else {
		fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s\n", verb, r.ID, r.Version)
	}
	if r.Held {
		return exitWith(exitConsent, nil)
	}
	return nil
}

func newPluginInstallCmd(update bool) *cobra.Command {
	var o plugin.InstallOptions
	var yes, asJSON bool
	var grantFile, wsFile string
	use, short, verb := "install PKG", "Verify, show, ask consent per capability group, and install a plugin", "installed"
	if update {
		use, short, verb = "update PKG", "Update a plugin: narrowing applies at once, widening is held until `norma plugin consent` (exit 3)", "updated"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// A package that is not there is the user's input (exit 1),
			// not a state problem of the plugin directory (4).
			if _, err := os.Stat(args[0]); err != nil {
				return exitWith(exitFailed, err)
			}
			g, err := loadGrant(yes, grantFile)
			if err != nil {
				return err
			}
			o.Grant = g
			m, done, err := manager(cmd, !yes, wsFile, asJSON)
			if err != nil {
				return err
			}
			defer done()
			var r *plugin.Result
			if update {
				r, err = m.Update(cmd.Context(), args[0], o)
			} else {
				r, err = m.Install(cmd.Context(), args[0], o)
			}
			if err != nil {
				return pluginErr(err)
			}
			return printResult(cmd, asJSON, r, verb)
		},
	}
	c.Flags().BoolVar(&o.Dev, "dev", false, "allow an unsigned local package (flagged untrusted, strict sandbox profile)")
	c.Flags().BoolVar(&o.AllowDowngrade, "allow-downgrade", false, "allow a lower version than installed before (audited)")
	if update {
		c.Flags().BoolVar(&o.AllowUnsignedReplace, "allow-unsigned-replace", false, "let an unsigned --dev package replace a signed version (audited)")
	}
	c.Flags().BoolVar(&yes, "yes", false, "do not ask; requires --grant FILE")
	c.Flags().StringVar(&grantFile, "grant", "", "grant layer file (kind: grant) to consent with")
	c.Flags().StringVar(&wsFile, "workspace-policy", "", "workspace policy layer that bounds what may be installed")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object; no progress")
	return c
}

func newPluginConsentCmd() *cobra.Command {
	var yes, asJSON, tools bool
	var grantFile string
	c := &cobra.Command{
		Use:   "consent ID",
		Short: "Review what a held update adds and accept it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tools {
				return consentTools(cmd, args[0], yes)
			}
			g, err := loadGrant(yes, grantFile)
			if err != nil {
				return err
			}
			m, done, err := manager(cmd, !yes, "", asJSON)
			if err != nil {
				return err
			}
			defer done()
			r, err := m.Consent(cmd.Context(), args[0], g)
			if err != nil {
				return pluginErr(err)
			}
			return printResult(cmd, asJSON, r, "activated")
		},
	}
	c.Flags().BoolVar(&yes, "yes", false, "do not ask; requires --grant FILE")
	c.Flags().StringVar(&grantFile, "grant", "", "grant layer file for what widened")
	c.Flags().BoolVar(&tools, "tools", false, "accept a plugin's changed tools (a tool hold) instead of a held update")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return c
}

func newPluginListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list [--json]",
		Short: "List installed plugins",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, done, err := manager(cmd, false, "", true)
			if err != nil {
				return err
			}
			defer done()
			l, err := m.List()
			if err != nil {
				return pluginErr(err)
			}
			if asJSON {
				out := []map[string]any{}
				for _, st := range l {
					out = append(out, pluginStateJSON(st))
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			for _, st := range l {
				vs := st.Versions[st.Active]
				flags := ""
				if vs.Untrusted {
					flags += "  UNTRUSTED"
				}
				if st.Held != "" {
					flags += "  (update " + st.Held + " held: norma plugin consent " + st.ID + ")"
				}
				who := vs.Publisher
				if who == "" {
					who = vs.Signer
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s  %s%s\n", st.ID, st.Active, who, flags)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newPluginInfoCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "info ID [--json]",
		Short: "Show an installed plugin: versions, signer, trust, grant",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, done, err := manager(cmd, false, "", true)
			if err != nil {
				return err
			}
			defer done()
			st, err := m.Info(args[0])
			if err != nil {
				return pluginErr(err)
			}
			g, b, gerr := m.Grant(args[0])
			// What a held update asks for, as `plugin consent` will ask it.
			pending, _, _, perr := m.Pending(args[0])
			if asJSON {
				out := map[string]any{"state": pluginStateJSON(st)}
				if gerr == nil {
					out["grant"], out["binding"] = groupsJSON(plugin.GrantItems(g.Permissions)), b
				} else {
					out["grant_error"] = errText(gerr)
				}
				if st.Held != "" {
					if perr == nil {
						out["pending"] = groupsJSON(pending)
					} else {
						out["pending_error"] = errText(perr)
					}
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			vs := st.Versions[st.Active]
			fmt.Fprintf(w, "%s %s\n  signer %s %s\n  merkle root %s\n  manifest %s\n", st.ID, st.Active, vs.Signer, vs.Publisher, vs.MerkleRoot, vs.ManifestDigest)
			if vs.Untrusted {
				fmt.Fprintln(w, "  UNTRUSTED (unsigned --dev install; strict sandbox profile)")
			}
			if st.Held != "" {
				fmt.Fprintf(w, "  held update %s: norma plugin consent %s\n", st.Held, st.ID)
				if perr != nil {
					fmt.Fprintf(w, "    %v\n", perr)
				}
				for _, grp := range plugin.Groups {
					for _, it := range pending[grp] {
						fmt.Fprintf(w, "    + %s %s\n", grp, it)
					}
				}
			}
			if gerr != nil {
				fmt.Fprintf(w, "  grant: %v\n", gerr)
				return nil
			}
			fmt.Fprintf(w, "  grant (generation %d, versions %s..%s):\n", b.Generation, b.MinVersion, b.MaxVersion)
			items := plugin.GrantItems(g.Permissions)
			for _, grp := range plugin.Groups {
				for _, it := range items[grp] {
					fmt.Fprintf(w, "    %s %s\n", grp, it)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newPluginRemoveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "remove ID",
		Short: "Remove a plugin: files, grant and running processes (the audit trail stays)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, done, err := manager(cmd, false, "", true)
			if err != nil {
				return err
			}
			defer done()
			if err := m.Remove(cmd.Context(), args[0]); err != nil {
				return pluginErr(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
			return nil
		},
	}
}

// consentTools releases a tool hold after showing it and asking.
func consentTools(cmd *cobra.Command, id string, yes bool) error {
	home, err := stateDir(cmd)
	if err != nil {
		return exitWith(exitInternal, err)
	}
	h := host.Hold(home, id)
	if h == "" {
		fmt.Fprintf(cmd.OutOrStdout(), "%s has no tool hold\n", id)
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "held: %s\n", h)
	if !yes {
		fmt.Fprint(cmd.OutOrStdout(), "Accept the tools it serves now (each must still be in its signed manifest)? [y/N] ")
		var answer string
		fmt.Fscanln(cmd.InOrStdin(), &answer)
		if answer != "y" && answer != "Y" && answer != "yes" {
			return exitWith(exitConsent, errors.New("not accepted; the plugin stays held"))
		}
	}
	if err := host.ReleaseHold(home, id); err != nil {
		return exitWith(exitInternal, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "released: the next start pins the tools %s serves\n", id)
	return nil
}
