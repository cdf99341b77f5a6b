// Package fsguard is the scoped file-system capability that Norma hands to a
// tool: an [FS] opened on the workspace directory that accepts only
// workspace-relative names ("docs/a.md", "./a/../b", "workspace://docs/a.md"),
// resolves every name to one canonical path inside the workspace (following
// symbolic links that stay inside, refusing any that lead out), asks a
// [capability.Decider] whether that canonical path may be read or written, and
// only then touches the file, through openat2(2) relative to the workspace
// directory with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS on
// exactly the path that was checked. A symbolic link swapped in between the
// check and the use therefore makes the operation fail instead of being
// followed, and deny globs such as "**/.env*" are matched on where a path really
// leads, not on how the tool spelled it. Creating, truncating, renaming and
// removing are writes; a rename is checked at both ends (and, for a directory,
// for every entry it moves); a regular file with more than one hard link is
// never opened, since a hard link can alias a file outside the workspace or a
// denied one; WriteFile is atomic. Refusals are *fs.PathError values whose Err
// is a *capability.Error carrying the decision and a stable reason code
// (PATH_ESCAPE, FILESYSTEM_READ_DENIED, HARDLINK_REFUSED, ...). The guard is
// implemented for Linux 5.6 or later only; on every other platform, and on
// kernels without openat2, [New] fails instead of enforcing less.
package fsguard
