package plugin

import (
	"fmt"
	"maps"
	"slices"

	"github.com/norma-run/norma/capability"
)

// MaxVersionHistory bounds a version history ([State.History],
// [PluginTrust.Versions]): beyond it the lowest versions are forgotten
// first, so a version number that old could be reused with other contents
// (still only as a downgrade, which needs AllowDowngrade).
const MaxVersionHistory = 512

// remember records in h, keyed by the identity of v (the version without
// build metadata), that v has Merkle root root, keeping the first root
// recorded for it, and trims h to [MaxVersionHistory] entries.
func remember(h map[string]Digest, v version, root Digest) {
	if _, ok := h[v.identity()]; !ok {
		h[v.identity()] = root
	}
	if len(h) <= MaxVersionHistory {
		return
	}
	type entry struct {
		key string
		v   version
	}
	var all []entry
	for k := range h {
		if pv, err := parseVersion(k); err == nil {
			all = append(all, entry{k, pv})
		} else {
			delete(h, k) // not a version: never written by remember
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return a.v.compare(b.v) })
	for _, e := range all[:max(0, len(all)-MaxVersionHistory)] {
		delete(h, e.key)
	}
}

// checkVersion refuses (PLUGIN_ROLLBACK) an update of the installed plugin
// st to version ver with Merkle root root, for a signed package as for an
// unsigned --dev one:
//
//   - a version with the same identity (equal but for build metadata) as
//     a version installed now (active or held) or before ([State.History])
//     with other contents, even with allowDowngrade;
//   - a version lower than the highest of those, unless allowDowngrade.
//
// The very package of the active or held version again passes: Update
// then changes nothing.
func checkVersion(st *State, ver string, root Digest, allowDowngrade bool) error {
	v, err := parseVersion(ver)
	if err != nil {
		return newErr(capability.ReasonPluginManifestInvalid, "update", st.ID, "", err)
	}
	if vs := st.Versions[ver]; vs != nil && vs.MerkleRoot == root {
		return nil
	}
	var highest string
	var hv version
	seen := func(other string, r Digest, now bool) error {
		w, err := parseVersion(other)
		if err != nil {
			return newErr(capability.ReasonPluginState, "update", st.ID, "corrupt state.json: version "+strconvQuote(other), err)
		}
		if v.compare(w) == 0 && r != root {
			when, same := "is already installed", ""
			if !now {
				when = "was installed before"
			}
			if other != ver {
				same = fmt.Sprintf(" (%s is the same version: build metadata does not make another)", ver)
			}
			return newErr(capability.ReasonPluginRollback, "update", st.ID,
				fmt.Sprintf("version %s %s with other contents (merkle root %s; this package has %s)%s: give the package a new version", other, when, r, root, same), nil)
		}
		if highest == "" || w.compare(hv) > 0 {
			highest, hv = other, w
		}
		return nil
	}
	for _, k := range slices.Sorted(maps.Keys(st.Versions)) {
		if err := seen(k, st.Versions[k].MerkleRoot, true); err != nil {
			return err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.History)) {
		if err := seen(k, st.History[k], false); err != nil {
			return err
		}
	}
	if highest != "" && v.compare(hv) < 0 && !allowDowngrade {
		return newErr(capability.ReasonPluginRollback, "update", st.ID,
			fmt.Sprintf("version %s is lower than %s, installed before; pass --allow-downgrade to install it anyway", ver, highest), nil)
	}
	return nil
}
