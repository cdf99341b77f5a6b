package gate

import (
	"maps"
	"path"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/internal/shellcmd"
)

// egress is the content check at the exits (issue 29), after the
// capability layers allowed the call's destinations: what the call sends
// out — its whole input — is scanned by the detector engine
// (secret.Redactor.CheckEgress, the redactor's own engine and values)
// when the call leaves the machine: when it makes a network request
// (WebFetch, and a shell command that runs a network client or names a
// URL: the whole command, whose headers and data go with it), or when it is a plugin's
// (an MCP server's) tool that is not read-only by its manifest (it sends
// data or writes outside). A finding denies the call with SECRET_EGRESS
// or SENSITIVE_DATA_EGRESS, its rule naming the detector, never the
// value; the settings' egress rules (secret.Redactor.SetEgress, on the
// gate's redactor) may make a class ask
// instead, or allow a value toward a named origin or tool. An ask stands
// even where rules allow the call; in dontAsk it is a deny with the same
// reason. ok is false when the check lets the call on.
func (x *exec) egress() (capability.Decision, bool) {
	to := x.egressTo()
	if len(to) == 0 {
		return capability.Decision{}, false
	}
	d, _ := x.g.red.CheckEgress(to, x.in.Raw())
	if d.Mode == capability.Allow {
		return capability.Decision{}, false
	}
	d.Request = firstReq(x.reqs, x.entry.Name())
	if x.trace != nil {
		*x.trace = append(*x.trace, capability.LayerResult{Layer: d.Layer, Mode: d.Mode, Reason: d.Reason})
	}
	return d, true
}

// egressTo returns where the call sends what it sends: the origin of each
// network request, "tool:NAME" for a plugin tool that is not read-only,
// and for a shell command that talks to the network (shellTo) the
// origins of its URLs; nil for a call that stays on the machine.
func (x *exec) egressTo() []string {
	var to []string
	spawns := false
	for i := range x.reqs {
		switch x.reqs[i].Kind {
		case capability.NetRequest:
			to = append(to, x.reqs[i].Origin)
		case capability.ProcessSpawn:
			spawns = true
		}
	}
	if x.entry.Plugin().ID != "" && !x.entry.ReadOnly(x.in) {
		to = append(to, "tool:"+x.entry.Name())
	}
	if spawns {
		if acc, _, err := x.entry.Accesses(x.in); err == nil {
			for _, a := range acc {
				if a.Kind == capability.ProcessSpawn {
					to = append(to, shellTo(a.Command, a.Argv)...)
				}
			}
		}
	}
	return to
}

// netClients are the programs whose arguments go over the network.
var netClients = map[string]bool{
	"curl": true, "wget": true, "http": true, "https": true, "xh": true, "httpie": true, "nc": true, "ncat": true,
	"netcat": true, "socat": true, "telnet": true, "ssh": true, "scp": true, "sftp": true, "ftp": true, "aria2c": true,
	"lynx": true, "links": true, "w3m": true, "gh": true, "rsync": true,
}

// shellTo returns the destinations of a command that talks to the
// network: one that runs a network client (curl, wget, nc, ssh, …) or
// names a URL. They are the origins of the URLs among its words, or
// "shell:" when it names none (no allow entry names that: only the
// class's mode decides). nil for a command that does neither.
func shellTo(command string, argv []string) []string {
	if command == "" && len(argv) == 0 {
		return nil
	}
	if command != "" && !strings.Contains(command, "://") && !mentionsClient(command) {
		return nil
	}
	var se shellcmd.Effects
	if command != "" {
		se = shellcmd.Parse(command)
	} else {
		se = shellcmd.Argv(argv)
	}
	var to []string
	net := false
	for _, a := range se.Spawns {
		if len(a) > 0 && netClients[path.Base(a[0])] {
			net = true
		}
		for _, w := range a {
			if !strings.Contains(w, "://") {
				continue
			}
			net = true
			if u, err := weburl.Normalize(w); err == nil {
				to = append(to, u.Origin)
			}
		}
	}
	if net && len(to) == 0 {
		to = append(to, "shell:")
	}
	return to
}

// mentionsClient is a cheap test before parsing: whether command holds
// the name of a network client at all.
func mentionsClient(command string) bool {
	for c := range netClients {
		if strings.Contains(command, c) {
			return true
		}
	}
	return false
}

// untrustedMark starts a result delivered marked as untrusted data: a
// fetched page that addresses the model or hides text in invisible
// characters (WebFetch, package tool/builtin).
const untrustedMark = "NORMA " + string(capability.ReasonInjectionSuspected) + ":"

// markUntrusted records on the call's finished event (detail untrusted:
// INJECTION_SUSPECTED) that its result was delivered so marked, so the
// audit log shows which results the model was warned about.
func (x *exec) markUntrusted(content string) {
	if !strings.HasPrefix(content, untrustedMark) {
		return
	}
	d := maps.Clone(x.detail) // shared with the started event: a copy
	if d == nil {
		d = map[string]string{"toolUseId": x.c.ID}
	}
	d["untrusted"] = string(capability.ReasonInjectionSuspected)
	x.detail = d
}
