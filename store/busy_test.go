package store

import (
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// TestOpenWhileLocked: a new database that another connection holds
// under an exclusive lock (as a second process creating it at the same
// moment does) is opened once the lock is gone, not refused with
// SQLITE_BUSY; busy tells SQLITE_BUSY from other errors.
func TestOpenWhileLocked(t *testing.T) {
	p := filepath.Join(t.TempDir(), FileName)
	raw, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	if _, err := raw.Exec("PRAGMA journal_mode=WAL"); err != nil {
		t.Fatal(err)
	}
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("CREATE TABLE hold(x)"); err != nil {
		t.Fatal(err)
	}
	// A second connection without a busy handler meets SQLITE_BUSY.
	other, err := sql.Open("sqlite", "file:"+p+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, err = other.Exec("CREATE TABLE other(x)")
	if !busy(err) {
		t.Fatalf("a write under another's lock: %v, which busy does not call SQLITE_BUSY", err)
	}
	if busy(errors.New("database is locked")) || busy(nil) {
		t.Error("busy took a plain error for SQLITE_BUSY")
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		tx.Rollback()
	}()
	db, err := Open(t.Context(), p)
	if err != nil {
		t.Fatalf("Open while another held the new database: %v", err)
	}
	db.Close()
}
