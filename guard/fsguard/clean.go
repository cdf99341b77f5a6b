package fsguard

// Clean normalizes a workspace name ("workspace://a/b", "a/./b") to the clean
// relative form policies match on, without touching the disk (no symlink
// resolution; use FS.Resolve for that). It refuses what New's methods refuse:
// absolute paths, NUL, backslashes and anything that leaves the root, with
// PATH_ESCAPE.
func Clean(name string) (string, error) { return cleanName(name) }
