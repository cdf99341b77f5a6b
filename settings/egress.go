package settings

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/netguard/weburl"
	"github.com/norma-run/norma/manifest"
	"github.com/norma-run/norma/secret"
)

// egressBody is the egress section as written:
//
//	egress:
//	  secret: ask          # SECRET_EGRESS: deny (the default) or ask
//	  sensitive: ask       # SENSITIVE_DATA_EGRESS: deny (the default) or ask
//	  allow:
//	    - to: https://api.github.com       # an origin, or tool:mcp__SERVER__TOOL
//	      detector: github-token           # or secret: NAME, or sha256: HEX of the value
type egressBody struct {
	Secret    string `yaml:"secret"`
	Sensitive string `yaml:"sensitive"`
	Allow     []struct {
		To       string `yaml:"to"`
		Detector string `yaml:"detector"`
		Secret   string `yaml:"secret"`
		SHA256   string `yaml:"sha256"`
	} `yaml:"allow"`
}

// Egress is the merged egress section: what the content check at the
// exits (the broker, WebFetch, a tool whose effects leave the machine)
// does with a finding. The highest file that sets a class's mode wins;
// the allow lists of every file add up.
type Egress struct {
	Secret    string        `json:"secret,omitempty"`    // "deny" or "ask"; "" is deny
	Sensitive string        `json:"sensitive,omitempty"` // "deny" or "ask"; "" is deny
	Allow     []EgressAllow `json:"allow,omitempty"`
}

// EgressAllow is one value allowed toward one destination, with where
// it was written.
type EgressAllow struct {
	To       string `json:"to"` // a normalized origin, or tool:NAME
	Detector string `json:"detector,omitempty"`
	Secret   string `json:"secret,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Source   Source `json:"source"`
}

// Rules returns the section as the detector engine's rules (nil e: every
// finding denied).
func (e *Egress) Rules() *secret.EgressRules {
	if e == nil {
		return nil
	}
	mode := func(s string) capability.Mode {
		if s == "ask" {
			return capability.ApprovalRequired
		}
		return capability.Deny
	}
	r := &secret.EgressRules{Secret: mode(e.Secret), Sensitive: mode(e.Sensitive)}
	for _, a := range e.Allow {
		r.Allow = append(r.Allow, secret.EgressAllow{To: a.To, Detector: a.Detector, Secret: a.Secret, SHA256: strings.ToLower(a.SHA256), Source: a.Source.String()})
	}
	return r
}

// egress checks the egress section. What loosens it (ask, an allowed
// value) is not a workspace's to choose, whose author would otherwise let
// the agent send the user's credentials to an origin of their choosing:
// only the user's own file, --settings and managed settings may; a
// workspace's file may only say deny. Each allow entry names its
// destination (an origin, normalized, or tool:mcp__SERVER__TOOL) and
// exactly one of detector (a known one), secret (a secret's name) or
// sha256.
func (f *File) egress(doc *manifest.Document, scope Scope) manifest.Errors {
	eb := f.body.Egress
	if eb == nil {
		return nil
	}
	var probs manifest.Errors
	workspace := scope == ScopeWorkspace || scope == ScopeLocal
	for _, c := range []struct{ key, v string }{{"secret", eb.Secret}, {"sensitive", eb.Sensitive}} {
		if c.v == "ask" && workspace {
			probs = append(probs, doc.Problem("/egress/"+c.key, "what leaves with your credentials and data is yours to loosen: set ask in your user settings, --settings or managed settings, not in a workspace's"))
		}
	}
	e := &Egress{Secret: eb.Secret, Sensitive: eb.Sensitive}
	detectors := secret.Detectors()
	for i, a := range eb.Allow {
		ptr := "/egress/allow/" + strconv.Itoa(i)
		if workspace {
			probs = append(probs, doc.Problem(ptr, "a value allowed to leave is yours to choose: set it in your user settings, --settings or managed settings, not in a workspace's"))
			continue
		}
		to, err := egressTo(a.To)
		if err != nil {
			probs = append(probs, doc.Problem(ptr+"/to", err.Error()))
			continue
		}
		n := 0
		for _, s := range []string{a.Detector, a.Secret, a.SHA256} {
			if s != "" {
				n++
			}
		}
		switch {
		case n != 1:
			probs = append(probs, doc.Problem(ptr, "name exactly one of detector, secret or sha256: what may go to "+to))
			continue
		case a.Detector != "" && !slices.Contains(detectors, a.Detector):
			probs = append(probs, doc.Problem(ptr+"/detector", fmt.Sprintf("unknown detector %q (one of %s)", a.Detector, strings.Join(detectors, ", "))))
			continue
		case a.Detector == secret.DetectorKnownValue:
			probs = append(probs, doc.Problem(ptr+"/detector", "name the known value by its secret: secret: NAME"))
			continue
		case a.Secret != "" && !secret.ValidName(a.Secret) && a.Secret != secret.KindProviderKey:
			probs = append(probs, doc.Problem(ptr+"/secret", fmt.Sprintf("%q is not a secret's name (^[a-z][a-z0-9_]{0,63}$, or provider-key)", a.Secret)))
			continue
		}
		e.Allow = append(e.Allow, EgressAllow{To: to, Detector: a.Detector, Secret: a.Secret, SHA256: a.SHA256, Source: f.source(doc, ptr)})
	}
	f.egressSet = e
	return probs
}

// egressTo normalizes an allow entry's destination.
func egressTo(s string) (string, error) {
	if name, ok := strings.CutPrefix(s, "tool:"); ok {
		if !pluginTool().MatchString(name) && name != "WebFetch" {
			return "", fmt.Errorf("%q is not a tool that sends: tool:mcp__SERVER__TOOL (a destination origin is written https://host)", name)
		}
		return s, nil
	}
	o, err := weburl.NormalizeOrigin(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an origin (scheme://host[:port]) nor tool:NAME", s)
	}
	return o, nil
}

// mergeEgress folds f's egress section in: a higher file's mode wins a
// class, allow entries add up.
func (s *Settings) mergeEgress(f *File) {
	e := f.egressSet
	if e == nil {
		return
	}
	if s.Egress == nil {
		s.Egress = &Egress{}
	}
	if e.Secret != "" {
		s.Egress.Secret = e.Secret
	}
	if e.Sensitive != "" {
		s.Egress.Sensitive = e.Sensitive
	}
	s.Egress.Allow = append(s.Egress.Allow, e.Allow...)
}
