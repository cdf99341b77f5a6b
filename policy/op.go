package policy

import (
	"fmt"
	"strings"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/guard/fspath"
	"github.com/norma-run/norma/guard/netguard/weburl"
)

// ParseOp parses the --op syntax of `norma policy explain` and of policy
// test files into a normalized request:
//
//	fs.read PATH | fs.write PATH | net.request METHOD URL |
//	secret.use NAME ORIGIN | process.spawn ARGV... | external.write TOOL TARGET
//
// resolve, when not nil, maps a cleaned workspace path to its resolved form
// (symlinks followed inside the workspace); errors it returns are kept.
func ParseOp(op string, resolve func(string) (string, error)) (capability.Request, error) {
	f := strings.Fields(op)
	if len(f) == 0 {
		return capability.Request{}, fmt.Errorf("policy: empty op")
	}
	kind, err := capability.ParseKind(f[0])
	if err != nil {
		return capability.Request{}, err
	}
	args := f[1:]
	want := func(n int, usage string) error {
		if len(args) != n {
			return fmt.Errorf("policy: %s takes %s", kind, usage)
		}
		return nil
	}
	req := capability.Request{Kind: kind}
	switch kind {
	case capability.FSRead, capability.FSWrite:
		if err := want(1, "one PATH"); err != nil {
			return req, err
		}
		if resolve != nil {
			req.Path, err = resolve(args[0])
		} else {
			req.Path, err = fspath.Clean(args[0])
		}
		return req, err
	case capability.NetRequest:
		if err := want(2, "METHOD URL"); err != nil {
			return req, err
		}
		u, err := weburl.Normalize(args[1])
		if err != nil {
			return req, err
		}
		req.Method, req.Origin, req.Path = strings.ToUpper(args[0]), u.Origin, u.Path
		return req, nil
	case capability.SecretUse:
		if err := want(2, "NAME ORIGIN"); err != nil {
			return req, err
		}
		o, err := weburl.NormalizeOrigin(args[1])
		if err != nil {
			return req, err
		}
		req.Secret, req.Origin = args[0], o
		return req, nil
	case capability.ProcessSpawn:
		if len(args) == 0 {
			return req, fmt.Errorf("policy: process.spawn takes ARGV...")
		}
		req.Argv = args
		return req, nil
	case capability.ExternalWrite:
		if err := want(2, "TOOL TARGET"); err != nil {
			return req, err
		}
		req.Tool, req.Target = args[0], args[1]
		return req, nil
	}
	return req, fmt.Errorf("policy: unsupported op %q", f[0])
}
