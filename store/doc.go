// Package store is Norma's durable state. [Store] is everything a run
// persists: the hash-chained audit log ([audit.Backend]), approvals and
// their uses ([approval.Backend]), the execution ledger
// ([approval.Ledger]) and run locks. [DB] is the embedded default, one
// SQLite database file (modernc.org/sqlite, pure Go) under the state
// directory, in WAL mode with synchronous=FULL, so a transaction that
// returned is on disk; package store/postgres implements the same Store
// on PostgreSQL for a team. No caller names a concrete type: `norma
// --store` chooses (cmd/norma's openStore), and package store/storetest
// holds the cases both pass.
//
// The schema is a numbered list of migrations in code. [Open] applies the
// missing ones, each in its own transaction that also advances
// PRAGMA user_version, so a crash leaves the database at a whole version.
// A database written by a newer Norma (a higher version) is refused.
package store
