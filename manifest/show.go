package manifest

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/norma-run/norma/internal/termtext"
)

// Show writes the install screen: what the plugin can do, in plain words
// first, then the details a careful reader checks.
func Show(w io.Writer, m *Manifest) { ShowData(w, m, "") }

// ShowData is Show with the host path of the plugin's data directory
// (plugin.Manager.DataDir) on the line that announces it; "" names it
// STATE/plugins/ID/data. Every string of the screen but its own words is
// the package author's (the description, a secret's purpose, paths), so
// the whole screen is escaped for the terminal on its way out
// (termtext.EscapeText): a control sequence in them cannot move the
// cursor over, erase or recolor what the person consents to.
func ShowData(w io.Writer, m *Manifest, dataDir string) {
	var b strings.Builder
	showData(&b, m, dataDir)
	io.WriteString(w, termtext.EscapeText(b.String()))
}

func showData(w io.Writer, m *Manifest, dataDir string) {
	p := m.Permissions
	fmt.Fprintf(w, "%s %s\n", m.ID, m.Version)
	if m.Description != "" {
		fmt.Fprintf(w, "%s\n", m.Description)
	}
	fmt.Fprintf(w, "digest %s\n\n", m.Digest())

	fmt.Fprintln(w, "This plugin can:")
	for _, line := range Summary(m) {
		fmt.Fprintf(w, "  • %s\n", line)
	}

	fmt.Fprintln(w, "\nTools:")
	for _, t := range m.Tools {
		var notes []string
		if t.WritesExternal() {
			notes = append(notes, "writes to an external system")
		} else if t.Effects.Data == "send" {
			notes = append(notes, "sends data out")
		} else {
			notes = append(notes, "reads only")
		}
		if t.NeedsApproval() {
			notes = append(notes, "asks for approval on every call")
		}
		fmt.Fprintf(w, "  %-24s %s\n", t.Name, strings.Join(notes, "; "))
	}

	fmt.Fprintf(w, "\nStarts, inside the sandbox:\n  %s\n", termtext.Escape(LaunchLine(m)))
	if m.DataDir {
		if dataDir == "" {
			dataDir = "STATE/plugins/" + m.ID + "/data"
		}
		fmt.Fprintf(w, "  with a data directory of its own, read-write, kept across runs and updates: %s\n", termtext.Escape(dataDir))
	}

	if fs := p.Filesystem; fs != nil && len(fs.Deny) > 0 {
		fmt.Fprintln(w, "\nNever touches (even if granted elsewhere):")
		for _, g := range fs.Deny {
			fmt.Fprintf(w, "  %s\n", g)
		}
	}
	if n := p.Network; n != nil && len(n.Requests) > 0 {
		fmt.Fprintln(w, "\nNetwork requests:")
		for _, r := range n.Requests {
			appr := ""
			if r.Approval == "per_action" {
				appr = "  (approval per request)"
			}
			fmt.Fprintf(w, "  %s %s%s\n", strings.Join(r.Methods, ","), r.Origin, appr)
			for _, path := range r.Paths {
				fmt.Fprintf(w, "      %s\n", path)
			}
		}
	}
	if len(p.Secrets) > 0 {
		fmt.Fprintln(w, "\nSecrets (by reference; the plugin never sees the value):")
		for _, s := range p.Secrets {
			fmt.Fprintf(w, "  %s → sent only to %s as %s", s.Name, s.Purpose, injection(s))
			if len(s.Scopes) > 0 {
				fmt.Fprintf(w, "; scopes %s", strings.Join(s.Scopes, ", "))
			}
			fmt.Fprintln(w)
		}
	}
}

// Summary lists the plugin's powers in plain words, most dangerous last.
func Summary(m *Manifest) []string {
	p := m.Permissions
	var out []string
	if fs := p.Filesystem; fs != nil && len(fs.Read) > 0 {
		out = append(out, "read files in "+strings.Join(fs.Read, ", "))
	} else {
		out = append(out, "read no files")
	}
	if fs := p.Filesystem; fs != nil && len(fs.Write) > 0 {
		out = append(out, "write files in "+strings.Join(fs.Write, ", "))
	} else {
		out = append(out, "write no files")
	}
	if n := p.Network; n != nil && len(n.Requests) > 0 {
		var origins []string
		methods := map[string][]string{}
		for _, r := range n.Requests {
			if _, ok := methods[r.Origin]; !ok {
				origins = append(origins, r.Origin)
			}
			for _, m := range r.Methods {
				if !slices.Contains(methods[r.Origin], m) {
					methods[r.Origin] = append(methods[r.Origin], m)
				}
			}
		}
		for i, o := range origins {
			origins[i] = o + " (" + strings.Join(methods[o], ",") + ")"
		}
		out = append(out, "reach "+strings.Join(origins, ", "))
	} else {
		out = append(out, "reach no network")
	}
	if m.DataDir {
		out = append(out, "keep data of its own across runs")
	}
	for _, s := range p.Secrets {
		out = append(out, fmt.Sprintf("use the secret %q toward %s", s.Name, s.Purpose))
	}
	switch ProcessMode(p) {
	case "allow":
		out = append(out, "start other programs")
	case "approval_required":
		out = append(out, "start other programs, with your approval each time")
	default:
		out = append(out, "start no other programs")
	}
	var writers []string
	for _, t := range m.Tools {
		if t.WritesExternal() {
			writers = append(writers, t.Name)
		}
	}
	if len(writers) > 0 {
		mode := ExternalWriteMode(p)
		out = append(out, fmt.Sprintf("change external systems through %s (external writes: %s)", strings.Join(writers, ", "), mode))
	}
	return out
}
