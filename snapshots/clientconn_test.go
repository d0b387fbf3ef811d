package snapshots

import (
	"bytes"
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// TestClientConn: an inbound request's client connection is written and
// read back by every read, survives a JSON Lines round trip, and reads as
// zero (unknown) from a file of format 2.
func TestClientConn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, conn := range []int64{7, 0, 7} {
		e := sampleExchange(i + 1)
		e.ID, e.ClientConn = int64(i+1), conn
		w.AddExchange(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Version() != 3 {
		t.Errorf("version %d, want 3", s.Version())
	}
	want := []int64{7, 0, 7}
	check := func(name string, got []*Exchange, err error) {
		t.Helper()
		if err != nil || len(got) != len(want) {
			t.Fatalf("%s: %d exchanges, %v", name, len(got), err)
		}
		for i, e := range got {
			if e.ClientConn != want[i] {
				t.Errorf("%s: exchange %d: client conn %d, want %d", name, e.ID, e.ClientConn, want[i])
			}
		}
	}
	ex, err := collectErr(s.Exchanges(ctx, Filter{}))
	check("Exchanges", ex, err)
	reqs, err := s.Requests(ctx, []int64{1, 2, 3})
	check("Requests", reqs, err)

	var buf bytes.Buffer
	if err := ExportJSONL(ctx, s, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"client_conn":7`)) {
		t.Errorf("JSON Lines without client_conn:\n%s", buf.String())
	}
	path2 := filepath.Join(t.TempDir(), "j.snap")
	w2, err := Create(path2, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ImportJSONL(ctx, &buf, w2); err != nil {
		t.Fatal(err)
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path2)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	ex, err = collectErr(s2.Exchanges(ctx, Filter{}))
	check("JSON Lines round trip", ex, err)

	// A file of format 2 has no column: every read gives zero.
	s.Close()
	db, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`ALTER TABLE exchanges DROP COLUMN client_conn`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = '2' WHERE key = 'version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s3, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	want = []int64{0, 0, 0}
	ex, err = collectErr(s3.Exchanges(ctx, Filter{}))
	check("format 2 Exchanges", ex, err)
	reqs, err = s3.Requests(ctx, []int64{1, 2, 3})
	check("format 2 Requests", reqs, err)
	ans, err := s3.Answers(ctx, []int64{1, 2, 3})
	check("format 2 Answers", ans, err)
	if _, err := collectErr(s3.Calls(ctx)); err != nil {
		t.Errorf("format 2 Calls: %v", err)
	}
}
