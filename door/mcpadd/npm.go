package mcpadd

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// installNPM installs c.Package into dir with npm (no install scripts: they
// would run unconfined on the host) and returns the source and the
// entrypoint: the package's bin target, relative to dir.
func installNPM(ctx context.Context, b *builder, c Command) (Source, string, error) {
	spec := c.Package
	if c.Version != "" {
		spec += "@" + c.Version
	}
	if err := b.run(ctx, "npm", "install", "--prefix", b.dir, "--no-audit", "--no-fund", "--ignore-scripts", spec); err != nil {
		return Source{}, "", err
	}
	pkgDir := filepath.Join(b.dir, "node_modules", filepath.FromSlash(c.Package))
	pj, err := readPackageJSON(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return Source{}, "", err
	}
	target, err := pj.binTarget(c.Package)
	if err != nil {
		return Source{}, "", err
	}
	entry := path.Join("node_modules", c.Package, target)
	if err := chmodInside(b.dir, entry); err != nil {
		return Source{}, "", fmt.Errorf("npm: bin target %s: %w", entry, err)
	}
	integrity, err := lockIntegrity(filepath.Join(b.dir, "package-lock.json"), c.Package)
	if err != nil {
		return Source{}, "", err
	}
	if err := dropBinLinks(filepath.Join(b.dir, "node_modules")); err != nil {
		return Source{}, "", err
	}
	return Source{Kind: KindNPM, Package: c.Package, Version: pj.Version, Integrity: integrity}, entry, nil
}

type packageJSON struct {
	Name    string          `json:"name"`
	Version string          `json:"version"`
	Bin     json.RawMessage `json:"bin"`
}

func readPackageJSON(file string) (*packageJSON, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("npm: the installed package has no package.json: %w", err)
	}
	var pj packageJSON
	if err := json.Unmarshal(b, &pj); err != nil {
		return nil, fmt.Errorf("npm: %s: %w", file, err)
	}
	return &pj, nil
}

// binTarget is the file the package's bin names: the only one, or the
// one named after the package.
func (pj *packageJSON) binTarget(name string) (string, error) {
	var one string
	if err := json.Unmarshal(pj.Bin, &one); err == nil && one != "" {
		return cleanTarget(one)
	}
	var many map[string]string
	if err := json.Unmarshal(pj.Bin, &many); err != nil || len(many) == 0 {
		return "", fmt.Errorf("npm: %s declares no bin: it is not a command-line server", name)
	}
	if len(many) == 1 {
		for _, t := range many {
			return cleanTarget(t)
		}
	}
	base := path.Base(name)
	if t, ok := many[base]; ok {
		return cleanTarget(t)
	}
	keys := make([]string, 0, len(many))
	for k := range many {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "", fmt.Errorf("npm: %s has several bins (%s) and none named %s", name, strings.Join(keys, ", "), base)
}

// cleanTarget refuses a bin target outside the package.
func cleanTarget(t string) (string, error) {
	c := path.Clean(strings.TrimPrefix(t, "./"))
	if c == "." || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("npm: bin target %q is outside the package", t)
	}
	return c, nil
}

// lockIntegrity is the registry's integrity string of the installed package.
func lockIntegrity(file, name string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("npm: no package-lock.json: %w", err)
	}
	var lock struct {
		Packages map[string]struct {
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	if err := json.Unmarshal(b, &lock); err != nil {
		return "", fmt.Errorf("npm: package-lock.json: %w", err)
	}
	i := lock.Packages["node_modules/"+name].Integrity
	if i == "" {
		return "", fmt.Errorf("npm: package-lock.json has no integrity for %s", name)
	}
	return i, nil
}

// dropBinLinks removes npm's .bin directories: they hold only links to
// the packages' bin targets, which a package may not contain and which
// nothing needs at run time (the entrypoint is the target itself).
func dropBinLinks(root string) error {
	var bins []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".bin" {
			bins = append(bins, p)
			return filepath.SkipDir
		}
		return nil
	})
	for _, p := range bins {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	return err
}

// chmodInside makes the file at rel under dir executable, following links
// only inside dir: a link that leaves the package (a linked directory, a
// symbolic link in it) must not change the mode of a file of the host.
func chmodInside(dir, rel string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(filepath.FromSlash(rel))
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file")
	}
	return root.Chmod(filepath.FromSlash(rel), 0o755)
}
