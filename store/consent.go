package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/norma-run/norma/plugin"
)

// RecordConsent implements [plugin.ConsentBackend].
func (d *DB) RecordConsent(ctx context.Context, r plugin.ConsentRecord) error {
	granted, err := ConsentGranted(r)
	if err != nil {
		return err
	}
	return d.tx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO plugin_consents
			(plugin, version, manifest_digest, permission_digest, grant_digest, generation, action, granted, who, host, time_ns)
			VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
			r.Plugin, r.Version, r.ManifestDigest, r.PermissionDigest, r.GrantDigest, int64(r.Generation),
			string(r.Action), granted, r.Who, r.Host, TimeNS(r.Time))
		return err
	})
}

// Consents implements [plugin.ConsentBackend].
func (d *DB) Consents(ctx context.Context, f plugin.ConsentFilter) ([]plugin.ConsentRecord, error) {
	var where []string
	var args []any
	if f.Plugin != "" {
		where, args = append(where, "plugin = ?"), append(args, f.Plugin)
	}
	if f.Host != "" {
		where, args = append(where, "host = ?"), append(args, f.Host)
	}
	if f.Latest {
		where = append(where, "seq IN (SELECT max(seq) FROM plugin_consents GROUP BY plugin, host)")
	}
	q := "SELECT " + ConsentColumns("granted") + " FROM plugin_consents"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	rows, err := d.db.QueryContext(ctx, q+" ORDER BY seq", args...)
	if err != nil {
		return nil, fmt.Errorf("store: consents: %w", err)
	}
	defer rows.Close()
	var out []plugin.ConsentRecord
	for rows.Next() {
		r, err := ScanConsent(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// ConsentColumns lists the columns [ScanConsent] reads, in its order;
// granted is how the backend selects the granted JSON as text.
func ConsentColumns(granted string) string {
	return "seq, plugin, version, manifest_digest, permission_digest, grant_digest, generation, action, " +
		granted + ", who, host, time_ns"
}

// ScanConsent reads one row of [ConsentColumns] with scan (a row's Scan),
// the one decoding of a stored consent for every backend.
func ScanConsent(scan func(...any) error) (plugin.ConsentRecord, error) {
	var r plugin.ConsentRecord
	var gen, ns int64
	var action, granted string
	if err := scan(&r.Seq, &r.Plugin, &r.Version, &r.ManifestDigest, &r.PermissionDigest, &r.GrantDigest,
		&gen, &action, &granted, &r.Who, &r.Host, &ns); err != nil {
		return r, fmt.Errorf("store: consents: %w", err)
	}
	if err := json.Unmarshal([]byte(granted), &r.Granted); err != nil {
		return r, fmt.Errorf("store: consent %d: %w", r.Seq, err)
	}
	r.Generation, r.Action, r.Time = uint64(gen), plugin.ConsentAction(action), NSTime(ns)
	return r, nil
}

// ConsentGranted checks a consent record before it is stored and returns
// its granted items as the JSON every backend stores.
func ConsentGranted(r plugin.ConsentRecord) ([]byte, error) {
	if r.Plugin == "" || r.Action == "" {
		return nil, fmt.Errorf("store: consent record without plugin or action")
	}
	return json.Marshal(r.Granted)
}
