package plugin

import (
	"context"
	"os"
	"os/user"
	"time"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/manifest"
)

// ConsentAction is what a [ConsentRecord] records.
type ConsentAction string

// Consent actions. They are stored: never rename one.
const (
	// ConsentInstall is the consent given at install.
	ConsentInstall ConsentAction = "install"
	// ConsentUpdate is an update that asked nothing new: the old grant,
	// restricted to what the new version still requests, carried over.
	ConsentUpdate ConsentAction = "update"
	// ConsentGrant is a consent to what an update added or widened (a
	// held update's `norma plugin consent`, or an update with --grant).
	ConsentGrant ConsentAction = "consent"
	// ConsentRevoke is the removal of the plugin and its grant.
	ConsentRevoke ConsentAction = "revoke"
)

// ConsentRecord is one change of a plugin's grant, as the team's store
// keeps it so that a server can list plugins with their grants across
// machines. The grant that is enforced stays in STATE/plugins/ID
// (grant.yaml, bound by grant.json); the record says what it was, who
// gave it, where and when. It holds no secret: secrets are named, never
// valued, in a grant.
type ConsentRecord struct {
	// Seq is the store's sequence number, set by [ConsentBackend.Consents].
	Seq              int64         `json:"seq,omitempty"`
	Plugin           string        `json:"plugin"`
	Version          string        `json:"version"`
	ManifestDigest   string        `json:"manifestDigest"`
	PermissionDigest string        `json:"permissionDigest,omitempty"`
	GrantDigest      string        `json:"grantDigest,omitempty"`
	Generation       uint64        `json:"generation,omitempty"`
	Action           ConsentAction `json:"action"`
	// Granted is the grant's items per group ([GrantItems]); empty for a
	// revocation.
	Granted map[Group][]string `json:"granted"`
	Who     string             `json:"who,omitempty"`
	Host    string             `json:"host,omitempty"`
	Time    time.Time          `json:"time"`
}

// ConsentFilter selects consent records. Zero fields do not constrain.
type ConsentFilter struct {
	Plugin string
	Host   string
	// Latest returns only the newest record per plugin and host: the
	// grant each machine holds now (a revocation included).
	Latest bool
}

// ConsentBackend stores consent records. package store implements it on
// SQLite (and store/postgres on PostgreSQL). Implementations are safe for
// concurrent use and keep records append-only.
type ConsentBackend interface {
	// RecordConsent appends r; it returns after the record is durable.
	RecordConsent(ctx context.Context, r ConsentRecord) error
	// Consents returns the records that match f, oldest first.
	Consents(ctx context.Context, f ConsentFilter) ([]ConsentRecord, error)
}

// recordConsent is the one place that records a consent in the store:
// writeGrant (install, update, consent) and Remove (revoke) call it before
// they change the grant files, so a failure changes nothing. r names the
// plugin, version, digests and action; Granted is taken from grant (nil:
// nothing, a revocation). Without a configured backend (Options.Consents
// nil) grant.json and the audit log are the only records.
func (m *Manager) recordConsent(ctx context.Context, r ConsentRecord, grant *manifest.Layer) error {
	if m.o.Consents == nil {
		return nil
	}
	r.Who, r.Host, r.Time, r.Granted = m.o.Who, m.o.Host, m.o.Now().UTC(), map[Group][]string{}
	if grant != nil {
		r.Granted = GrantItems(grant.Permissions)
	}
	if err := m.o.Consents.RecordConsent(context.WithoutCancel(ctx), r); err != nil {
		return newErr(capability.ReasonPluginState, "consent", r.Plugin, "the store refused the consent record; nothing changed", err)
	}
	return nil
}

// DefaultWho is the name a consent is recorded under: the login name of
// the user running Norma, "" when unknown.
func DefaultWho() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// DefaultHost is the machine a consent is recorded for: its host name.
func DefaultHost() string {
	h, _ := os.Hostname()
	return h
}
