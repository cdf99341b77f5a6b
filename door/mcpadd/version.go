package mcpadd

import (
	"strconv"
	"strings"
)

// semverOf turns a package version into a semantic version: npm's as it
// is, a python release (PEP 440) padded to three numbers, with anything
// beyond them (1.2.3.4, rc1, .post1) kept as build metadata.
func semverOf(v string) string {
	core, rest := v, ""
	if i := strings.IndexFunc(v, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') }); i >= 0 {
		core, rest = v[:i], v[i:]
	}
	parts := strings.Split(strings.Trim(core, "."), ".")
	var nums []string
	for _, p := range parts {
		if n, err := strconv.Atoi(p); err == nil {
			nums = append(nums, strconv.Itoa(n))
		}
	}
	if len(nums) == 3 && rest == "" || strings.ContainsAny(rest, "-+") && len(nums) == 3 {
		return v
	}
	for len(nums) < 3 {
		nums = append(nums, "0")
	}
	out := strings.Join(nums[:3], ".")
	var build []string
	build = append(build, nums[3:]...)
	if meta := sanitizeMeta(rest); meta != "" {
		build = append(build, meta)
	}
	if len(build) > 0 {
		out += "+" + strings.Join(build, ".")
	}
	return out
}

func sanitizeMeta(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else if b.Len() > 0 {
			b.WriteByte('.')
		}
	}
	return strings.Trim(strings.ReplaceAll(b.String(), "..", "."), ".")
}
