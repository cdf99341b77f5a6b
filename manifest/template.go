package manifest

import (
	"fmt"
	"strings"
)

// Vars are the values of the templates a manifest's args and env may use.
type Vars struct {
	Package   string // the installed package directory (read-only)
	Data      string // the plugin's data directory (data_dir: true)
	Workspace string // the workspace root
	// Secret returns the broker placeholder of a declared secret.
	Secret func(name string) (string, error)
}

// Expand replaces the templates in s: ${package}, ${data}, ${workspace}
// and ${secret:NAME}. A "$" not followed by "{" is literal; there is no
// way to write a literal "${". The manifest was checked by Parse, so an
// error here means v lacks a value (a secret without a placeholder).
func Expand(s string, v Vars) (string, error) {
	var b strings.Builder
	err := walkTemplate(s, func(lit, ref string) error {
		b.WriteString(lit)
		switch {
		case ref == "":
			return nil
		case ref == "package":
			b.WriteString(v.Package)
		case ref == "data":
			if v.Data == "" {
				return fmt.Errorf("${data} used without data_dir")
			}
			b.WriteString(v.Data)
		case ref == "workspace":
			b.WriteString(v.Workspace)
		case strings.HasPrefix(ref, "secret:"):
			if v.Secret == nil {
				return fmt.Errorf("${%s}: no secret placeholders here", ref)
			}
			ph, err := v.Secret(strings.TrimPrefix(ref, "secret:"))
			if err != nil {
				return err
			}
			b.WriteString(ph)
		default:
			return fmt.Errorf("unknown template ${%s}", ref)
		}
		return nil
	})
	return b.String(), err
}

// templateRefs returns the templates s uses ("package", "secret:NAME", …)
// or an error that names what is wrong.
func templateRefs(s string) ([]string, error) {
	var refs []string
	err := walkTemplate(s, func(_, ref string) error {
		if ref == "" {
			return nil
		}
		switch name, isSecret := strings.CutPrefix(ref, "secret:"); {
		case ref == "package", ref == "data", ref == "workspace":
		case isSecret && name != "":
		default:
			return fmt.Errorf("unknown template ${%s}: use ${package}, ${data}, ${workspace} or ${secret:NAME}", ref)
		}
		refs = append(refs, ref)
		return nil
	})
	return refs, err
}

// walkTemplate calls f with each literal run and the template after it
// ("" at the end).
func walkTemplate(s string, f func(lit, ref string) error) error {
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			return f(s, "")
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			return fmt.Errorf("unclosed ${ at byte %d", i)
		}
		if err := f(s[:i], s[i+2:i+j]); err != nil {
			return err
		}
		s = s[i+j+1:]
	}
}

// ReservedEnv reports whether the host sets variable k for every plugin
// (paths, the broker's proxy and CA settings), so a manifest may not. The
// broker's and the plugin host's tests check that every variable they set
// is listed here.
func ReservedEnv(k string) bool {
	switch strings.ToUpper(k) {
	case "PATH", "HOME", "TMPDIR", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO":
		return true
	}
	return strings.HasPrefix(strings.ToUpper(k), "NORMA_")
}

// launch checks args and env: templates known, secrets declared, ${data}
// only with data_dir, no reserved variable, and no variable that also
// receives a secret's placeholder (secrets[].env).
func (c *checker) launch(m *Manifest) {
	declared := map[string]bool{}
	secretEnv := map[string]bool{}
	for _, s := range m.Permissions.Secrets {
		declared[s.Name] = true
		if s.Env != "" {
			secretEnv[s.Env] = true
		}
	}
	check := func(ptr, s string) {
		refs, err := templateRefs(s)
		if err != nil {
			c.add(ptr, false, "%s", err)
			return
		}
		for _, r := range refs {
			if name, ok := strings.CutPrefix(r, "secret:"); ok && !declared[name] {
				c.add(ptr, false, "${%s} names a secret that permissions.secrets does not declare", r)
			}
			if r == "data" && !m.DataDir {
				c.add(ptr, false, "${data} needs data_dir: true")
			}
		}
	}
	for i, a := range m.Args {
		check(fmt.Sprintf("/args/%d", i), a)
	}
	for k, v := range m.Env {
		ptr := "/env/" + k
		switch {
		case !validEnvName(k):
			c.add(ptr, true, "%q is not a variable name (letters, digits and _, not starting with a digit, at most 128)", k)
		case ReservedEnv(k):
			c.add(ptr, true, "%s is set by Norma for every plugin and cannot be set here", k)
		case secretEnv[k]:
			c.add(ptr, true, "%s already receives a secret's placeholder (permissions.secrets[].env)", k)
		default:
			check(ptr, v)
		}
	}
}

func validEnvName(k string) bool {
	if k == "" || len(k) > 128 || k[0] >= '0' && k[0] <= '9' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
