package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/norma-run/norma/plugin"
	"github.com/norma-run/norma/store"
)

// RecordConsent implements [plugin.ConsentBackend].
func (d *DB) RecordConsent(ctx context.Context, r plugin.ConsentRecord) error {
	granted, err := store.ConsentGranted(r)
	if err != nil {
		return err
	}
	_, err = d.pool.Exec(ctx, `INSERT INTO plugin_consents
		(tenant, plugin, version, manifest_digest, permission_digest, grant_digest, generation, action, granted, who, host, time_ns)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		d.tenant, r.Plugin, r.Version, r.ManifestDigest, r.PermissionDigest, r.GrantDigest, int64(r.Generation),
		string(r.Action), string(granted), r.Who, r.Host, store.TimeNS(r.Time))
	if err != nil {
		return fmt.Errorf("store: record consent: %w", err)
	}
	return nil
}

// Consents implements [plugin.ConsentBackend], for this DB's tenant.
func (d *DB) Consents(ctx context.Context, f plugin.ConsentFilter) ([]plugin.ConsentRecord, error) {
	where := []string{"tenant = $1"}
	args := []any{d.tenant}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.Plugin != "" {
		add("plugin = $%d", f.Plugin)
	}
	if f.Host != "" {
		add("host = $%d", f.Host)
	}
	if f.Latest {
		where = append(where, "seq IN (SELECT max(seq) FROM plugin_consents WHERE tenant = $1 GROUP BY plugin, host)")
	}
	rows, err := d.pool.Query(ctx, "SELECT "+store.ConsentColumns("granted::text")+" FROM plugin_consents WHERE "+strings.Join(where, " AND ")+" ORDER BY seq", args...)
	if err != nil {
		return nil, fmt.Errorf("store: consents: %w", err)
	}
	defer rows.Close()
	var out []plugin.ConsentRecord
	for rows.Next() {
		r, err := store.ScanConsent(rows.Scan)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
