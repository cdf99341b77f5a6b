package capability

// Reason codes used by the file guard (guard/fsguard). They live in their own
// file so that the guard can add codes without editing the shared list; the
// same rule applies: never rename one.
const (
	// ReasonHardlinkRefused: the guard refused to open a regular file whose
	// link count is greater than one. A hard link is a second name for the
	// same inode, so it can alias a file outside the workspace or a file a
	// deny rule protects; the guard cannot see the other names.
	ReasonHardlinkRefused Reason = "HARDLINK_REFUSED"
	// ReasonSpecialFileRefused: the guard refused to open something that is
	// neither a regular file nor a directory (a FIFO, socket or device node),
	// because opening or reading it can block, or act on hardware.
	ReasonSpecialFileRefused Reason = "SPECIAL_FILE_REFUSED"
	// ReasonProtectedPath: the path passes through a directory the guard
	// protects by identity (Norma's state directory), whatever name leads
	// there: renamed since the policy was compiled, reached through a bind
	// mount or through a spelling a deny rule does not match.
	ReasonProtectedPath Reason = "PROTECTED_PATH"
)
