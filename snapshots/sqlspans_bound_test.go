package snapshots

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// TestSQLSpansBounded: of a recording of more inbound exchanges than the
// limit, sqlSpans reads the first ones by start (their statements counted)
// and the unattributed statements up to the end of the last one read; the
// spans of one endpoint share their key's string.
func TestSQLSpansBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		start := t0.Add(time.Duration(i) * time.Second)
		id := w.NewID()
		w.AddExchange(&Exchange{ID: id, Direction: Inbound, Service: "app:80", Method: "GET", URL: "http://app/x",
			Start: start, Duration: 100 * time.Millisecond, Status: 200, Endpoint: "GET /x"})
		w.AddStatement(&Statement{ExchangeID: id, Start: start, SQL: "SELECT 1", Fingerprint: "SELECT ?"})
		w.AddStatement(&Statement{Start: start.Add(500 * time.Millisecond), SQL: "SELECT 2", Fingerprint: "SELECT ?"})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	spans, h, err := s.sqlSpans(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 4 || !spans[3].Start.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("%d spans, the last at %v; want the first 4", len(spans), spans[len(spans)-1].Start)
	}
	for _, sp := range spans {
		if sp.Statements != 1 || sp.Key != spans[0].Key {
			t.Errorf("span %+v: want 1 statement, key %q", sp, spans[0].Key)
		}
	}
	// The unattributed statements of seconds 0, 1 and 2 (at +500 ms) start
	// before the 4th span ends (3.1 s); that of second 3 does not.
	if n := h.Total(); n != 3 {
		t.Errorf("%d unattributed statements, want 3", n)
	}
}
