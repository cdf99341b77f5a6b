package policy

import (
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// methods is the fixed method set of the manifest format; its index is the
// slot in an origin's per-method table.
var methods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

func methodIndex(m string) int {
	for i, x := range methods {
		if x == m {
			return i
		}
	}
	return -1
}

// netMatch is what a matching path template yields.
type netMatch struct {
	mode capability.Mode
	rule string
	// declared is rule with the path template's position, as
	// capability.Decision.Declared names it: …requests[1].paths[0].
	declared string
}

// trieNode is one segment position of the path templates of one origin and
// method. Literal children are tried before the parameter child; every
// matching template is considered and the most permissive one wins (rules
// in one layer are a union).
type trieNode struct {
	lit   map[string]*trieNode
	param *trieNode
	end   *netMatch
}

func (n *trieNode) insert(segs []manifest.Segment, m netMatch) {
	for _, s := range segs {
		if s.Param != "" {
			if n.param == nil {
				n.param = &trieNode{}
			}
			n = n.param
			continue
		}
		if n.lit == nil {
			n.lit = map[string]*trieNode{}
		}
		c := n.lit[s.Literal]
		if c == nil {
			c = &trieNode{}
			n.lit[s.Literal] = c
		}
		n = c
	}
	if n.end == nil || m.mode > n.end.mode {
		mm := m
		n.end = &mm
	}
}

// lookup walks path (escaped, "/"-separated, starting with "/") and returns
// the best match, or nil.
func (n *trieNode) lookup(path string) *netMatch {
	if path == "/" || path == "" {
		return n.end
	}
	return n.walk(path[1:])
}

func (n *trieNode) walk(rest string) *netMatch {
	seg, next, last := rest, "", true
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		seg, next, last = rest[:i], rest[i+1:], false
	}
	var best *netMatch
	if c := n.lit[seg]; c != nil {
		best = c.step(next, last)
		if best != nil && best.mode == capability.Allow {
			return best
		}
	}
	if n.param != nil && paramSegment(seg) {
		if m := n.param.step(next, last); m != nil && (best == nil || m.mode > best.mode) {
			best = m
		}
	}
	return best
}

func (n *trieNode) step(next string, last bool) *netMatch {
	if last {
		return n.end
	}
	return n.walk(next)
}

// paramSegment reports whether seg may bind a {name}: one non-empty segment
// that is not a dot segment and never held an encoded slash or backslash.
func paramSegment(seg string) bool {
	if seg == "" || seg == "." || seg == ".." {
		return false
	}
	for i := 0; i+2 < len(seg); i++ {
		if seg[i] == '%' {
			h := seg[i+1 : i+3]
			if h == "2F" || h == "2f" || h == "5C" || h == "5c" || h == "2E" || h == "2e" || h == "00" {
				return false
			}
		}
	}
	return true
}

// originRules holds one origin's rules, per method.
type originRules struct {
	byMethod [len(methods)]*trieNode
}

// netIndex is a layer's compiled network rules.
type netIndex struct {
	origins map[string]*originRules
}

func compileNet(layer capability.Layer, n *manifest.Network) (*netIndex, error) {
	idx := &netIndex{origins: map[string]*originRules{}}
	if n == nil {
		return idx, nil
	}
	for i, r := range n.Requests {
		mode := capability.Allow
		if r.Approval == "per_action" {
			mode = capability.ApprovalRequired
		}
		m := netMatch{mode: mode, rule: string(layer) + ":permissions.network.requests[" + itoa(i) + "]"}
		or := idx.origins[r.Origin]
		if or == nil {
			or = &originRules{}
			idx.origins[r.Origin] = or
		}
		for _, meth := range r.Methods {
			mi := methodIndex(meth)
			if mi < 0 {
				return nil, errorf("%s: method %q", m.rule, meth)
			}
			if or.byMethod[mi] == nil {
				or.byMethod[mi] = &trieNode{}
			}
			for j, p := range r.Paths {
				segs, err := manifest.ParseTemplate(p)
				if err != nil {
					return nil, errorf("%s: %v", m.rule, err)
				}
				pm := m
				pm.declared = m.rule + ".paths[" + itoa(j) + "]"
				or.byMethod[mi].insert(segs, pm)
			}
		}
	}
	return idx, nil
}

// decide answers a net.request for an allow-list layer: the mode, the
// reason, the matching entry's rule and its path template's position.
func (x *netIndex) decide(req *capability.Request) (capability.Mode, capability.Reason, string, string) {
	or := x.origins[req.Origin]
	if or == nil {
		return capability.Deny, capability.ReasonNetworkDestinationDenied, "", ""
	}
	mi := methodIndex(req.Method)
	if mi < 0 || or.byMethod[mi] == nil {
		return capability.Deny, capability.ReasonNetworkMethodDenied, "", ""
	}
	m := or.byMethod[mi].lookup(req.Path)
	if m == nil {
		return capability.Deny, capability.ReasonNetworkPathDenied, "", ""
	}
	if m.mode == capability.ApprovalRequired {
		return m.mode, capability.ReasonApprovalRequired, m.rule, m.declared
	}
	return m.mode, capability.ReasonAllowed, m.rule, m.declared
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	var b [20]byte
	n := len(b)
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	return string(b[n:])
}
