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
	if r.Plugin == "" || r.Action == "" {
		return fmt.Errorf("store: consent record without plugin or action")
	}
	granted, err := json.Marshal(r.Granted)
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
	q := `SELECT seq, plugin, version, manifest_digest, permission_digest, grant_digest, generation, action, granted, who, host, time_ns
		FROM plugin_consents`
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
		var r plugin.ConsentRecord
		var gen, ns int64
		var action string
		var granted []byte
		if err := rows.Scan(&r.Seq, &r.Plugin, &r.Version, &r.ManifestDigest, &r.PermissionDigest, &r.GrantDigest,
			&gen, &action, &granted, &r.Who, &r.Host, &ns); err != nil {
			return nil, fmt.Errorf("store: consents: %w", err)
		}
		if err := json.Unmarshal(granted, &r.Granted); err != nil {
			return nil, fmt.Errorf("store: consent %d: %w", r.Seq, err)
		}
		r.Generation, r.Action, r.Time = uint64(gen), plugin.ConsentAction(action), NSTime(ns)
		out = append(out, r)
	}
	return out, rows.Err()
}
