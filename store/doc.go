// Package store is Norma's durable state: one SQLite database file
// (modernc.org/sqlite, pure Go) under the state directory, in WAL mode with
// synchronous=FULL, so a transaction that returned is on disk.
//
// [DB] implements [Store], which is the union of the per-concern backends
// its callers declare: [audit.Backend] for the hash-chained log and
// [approval.Backend] for approvals, [plugin.ConsentBackend] for the
// record of every change of a plugin's grant (the enforced grant stays in
// the state directory's plugins/ID). package store/postgres implements the
// same interfaces; no caller names *DB.
//
// The schema is a numbered list of migrations in code. [Open] applies the
// missing ones, each in its own transaction that also advances
// PRAGMA user_version, so a crash leaves the database at a whole version.
// A database written by a newer Norma (a higher version) is refused.
package store
