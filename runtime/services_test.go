package runtime_test

import (
	"path/filepath"
	"testing"

	"github.com/norma-run/norma/capability"
	"github.com/norma-run/norma/runtime"
	"github.com/norma-run/norma/store"
)

// TestServicesHoldRun: services opened with Run hold the run's lock until
// Close. A second process's services for the same run, over the same
// state directory, fail with RUN_LOCKED and close their store; services
// for another run, or without one, open beside them. After Close the run
// is free again.
func TestServicesHoldRun(t *testing.T) {
	home := t.TempDir()
	open := func(run string) (*runtime.Services, error) {
		t.Helper()
		db, err := runtime.OpenStore(t.Context(), runtime.StoreLocation{SQLite: filepath.Join(home, store.FileName)})
		if err != nil {
			t.Fatal(err)
		}
		return runtime.OpenServices(t.Context(), home, db, runtime.ServicesOptions{Run: run})
	}
	s1, err := open("r1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open("r1"); capability.ReasonOf(err) != capability.ReasonRunLocked {
		t.Fatalf("second services of r1 = %v, want RUN_LOCKED", err)
	}
	for _, run := range []string{"r2", ""} {
		s, err := open(run)
		if err != nil {
			t.Fatalf("services of %q beside r1: %v", run, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s3, err := open("r1")
	if err != nil {
		t.Fatalf("r1 after Close: %v", err)
	}
	s3.Close()
}
