package plugin

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// version is a parsed semantic version (semver.org 2.0.0). Build metadata is
// kept for display but ignored by comparisons, as the specification says.
type version struct {
	major, minor, patch uint64
	pre                 []string
	build               string
}

func parseVersion(s string) (version, error) {
	var v version
	bad := func(why string) (version, error) {
		return version{}, fmt.Errorf("plugin: version %q is not a semantic version: %s", s, why)
	}
	core, build, hasBuild := strings.Cut(s, "+")
	if hasBuild {
		if build == "" {
			return bad("empty build metadata")
		}
		for _, id := range strings.Split(build, ".") {
			if id == "" || !isIdent(id) {
				return bad("malformed build metadata")
			}
		}
		v.build = build
	}
	core, pre, hasPre := strings.Cut(core, "-")
	if hasPre {
		if pre == "" {
			return bad("empty pre-release")
		}
		for _, id := range strings.Split(pre, ".") {
			if id == "" || !isIdent(id) {
				return bad("malformed pre-release")
			}
			if isNum(id) && len(id) > 1 && id[0] == '0' {
				return bad("leading zero in pre-release")
			}
			v.pre = append(v.pre, id)
		}
	}
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad("want MAJOR.MINOR.PATCH")
	}
	nums := [3]*uint64{&v.major, &v.minor, &v.patch}
	for i, p := range parts {
		if p == "" || !isNum(p) || (len(p) > 1 && p[0] == '0') {
			return bad("malformed number " + strconv.Quote(p))
		}
		n, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return bad("number out of range")
		}
		*nums[i] = n
	}
	return v, nil
}

func isNum(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// compare orders versions by semver precedence.
func (v version) compare(w version) int {
	if c := cmp.Compare(v.major, w.major); c != 0 {
		return c
	}
	if c := cmp.Compare(v.minor, w.minor); c != 0 {
		return c
	}
	if c := cmp.Compare(v.patch, w.patch); c != 0 {
		return c
	}
	switch {
	case len(v.pre) == 0 && len(w.pre) == 0:
		return 0
	case len(v.pre) == 0:
		return 1
	case len(w.pre) == 0:
		return -1
	}
	for i := 0; i < len(v.pre) && i < len(w.pre); i++ {
		a, b := v.pre[i], w.pre[i]
		an, bn := isNum(a), isNum(b)
		switch {
		case an && bn:
			x, _ := strconv.ParseUint(a, 10, 64)
			y, _ := strconv.ParseUint(b, 10, 64)
			if c := cmp.Compare(x, y); c != 0 {
				return c
			}
		case an:
			return -1
		case bn:
			return 1
		default:
			if c := strings.Compare(a, b); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(uint64(len(v.pre)), uint64(len(w.pre)))
}

// CompareVersions compares two semantic versions by precedence: -1, 0 or +1.
// It returns an error when either is not a semantic version.
func CompareVersions(a, b string) (int, error) {
	va, err := parseVersion(a)
	if err != nil {
		return 0, err
	}
	vb, err := parseVersion(b)
	if err != nil {
		return 0, err
	}
	return va.compare(vb), nil
}

// identity is the version without its build metadata: two versions with
// the same identity are the same version (semver.org: build metadata is
// ignored when determining precedence), so they must have the same contents.
func (v version) identity() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if len(v.pre) > 0 {
		s += "-" + strings.Join(v.pre, ".")
	}
	return s
}
