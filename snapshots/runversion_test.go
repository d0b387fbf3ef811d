package snapshots

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunSQLErrors: the statements the server rejected, per fingerprint and
// in total, survive a run file; results without any keep version 1's
// record layout.
func TestRunSQLErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "e.run")
	w, err := CreateRun(path, RunInfo{Name: "e"})
	if err != nil {
		t.Fatal(err)
	}
	var want []*Result
	for i := 1; i <= 300; i++ {
		r := sampleResult(i)
		if i%3 == 0 {
			r.SQLCounted = true
			r.SQL = []SQLCount{
				{Fingerprint: "INSERT INTO orders (id) VALUES (?)", Count: 1, Duration: time.Millisecond, Errors: i % 7},
				{Fingerprint: "SELEC ?", Errors: 2},
			}
		}
		w.Add(r)
		want = append(want, r)
	}
	if err := w.Close(RunInfo{Statements: 900, StatementErrors: 250}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Info(); got.Statements != 900 || got.StatementErrors != 250 {
		t.Errorf("info: %d statements, %d errors; want 900 and 250", got.Statements, got.StatementErrors)
	}
	if diff := cmp.Diff(want, collect(t, r.Results(context.Background()))); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if v := metaVersion(t, path); v != RunSchemaVersion {
		t.Errorf("version %d written, want %d", v, RunSchemaVersion)
	}
}

// TestRunVersion1 reads a run file of version 1: without statement errors
// its records are laid out as today's without errors, and run_info has no
// statement_errors.
func TestRunVersion1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.run")
	w, err := CreateRun(path, RunInfo{Name: "old"})
	if err != nil {
		t.Fatal(err)
	}
	var want []*Result
	for i := 1; i <= 50; i++ {
		r := sampleResult(i)
		w.Add(r)
		want = append(want, r)
	}
	if err := w.Close(RunInfo{Statements: 77}); err != nil {
		t.Fatal(err)
	}
	setVersion(t, path, "1", `DELETE FROM run_info WHERE key = 'statement_errors'`)
	r, err := OpenRun(path)
	if err != nil {
		t.Fatalf("open a version 1 run: %v", err)
	}
	defer r.Close()
	if got := r.Info(); got.Statements != 77 || got.StatementErrors != 0 {
		t.Errorf("info: %d statements, %d errors; want 77 and 0", got.Statements, got.StatementErrors)
	}
	if diff := cmp.Diff(want, collect(t, r.Results(context.Background()))); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	// A version this build does not know is refused, naming both.
	setVersion(t, path, strconv.Itoa(RunSchemaVersion+1))
	if _, err := OpenRun(path); !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), fmt.Sprintf("unsupported run file version %d", RunSchemaVersion+1)) {
		t.Errorf("open a run of version %d: err = %v, want ErrVersion saying unsupported run file version", RunSchemaVersion+1, err)
	}
}

func setVersion(t *testing.T, path, version string, more ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range append([]string{`UPDATE meta SET value = '` + version + `' WHERE key = 'version'`}, more...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
}

func metaVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'version'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(v)
	return n
}
