package mock

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// TestServerFromSnapshot: a mock reading a snapshot (Config.Snapshot), its
// index shared by two Servers (Config.Index), answers the nth call to a URL
// with the nth recorded answer, read from the file (in batches: fewer reads
// than answers), each Server counting its own; RecordedCalls counts the
// calls of the inbound exchanges asked for.
func TestServerFromSnapshot(t *testing.T) {
	t.Run("snapshot", func(t *testing.T) { testServerFromSnapshot(t, false) })
	t.Run("spool", func(t *testing.T) { testServerFromSnapshot(t, true) })
}

// testServerFromSnapshot is TestServerFromSnapshot, the answers copied to
// a spool first when spooled: the snapshot is closed then, so that an
// answer read from it would be a 502.
func testServerFromSnapshot(t *testing.T, spooled bool) {
	path := filepath.Join(t.TempDir(), "m.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n, keys = 600, 50
	for i := range n {
		id := w.NewID()
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Service: "app:80", Method: "GET",
			URL: "http://app/", Start: t0.Add(time.Duration(i) * time.Millisecond), Status: 200})
		body := fmt.Sprintf("answer %d to %d", i/keys, i%keys)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "http", Service: "stock.test:80", Method: "GET",
			URL: fmt.Sprintf("http://stock.test/s/%d", i%keys), Start: t0.Add(time.Duration(i)*time.Millisecond + 1),
			Status: 200, ResponseBody: []byte(body), ResponseBodySize: int64(len(body)), ParentID: id})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	idx, err := NewIndex(context.Background(), Config{Snapshot: snap})
	if err != nil {
		t.Fatal(err)
	}
	if len(idx.m.entries) != keys || idx.store.calls.Len() != n {
		t.Fatalf("index of %d requests and %d calls, want %d and %d", len(idx.m.entries), idx.store.calls.Len(), keys, n)
	}
	if spooled {
		f, err := idx.Spool(context.Background(), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if idx.SpoolSize() == 0 {
			t.Fatal("empty spool")
		}
		snap.Close()
	}
	for side := range 2 {
		s := newServer(t, Config{Snapshot: snap, Index: idx})
		c := proxyClient(t, startMock(t, s), nil)
		for i := range n {
			resp, body := do(t, c, "GET", fmt.Sprintf("http://stock.test/s/%d", i%keys), nil)
			if want := fmt.Sprintf("answer %d to %d", i/keys, i%keys); resp.StatusCode != http.StatusOK || string(body) != want {
				t.Fatalf("side %d, call %d: %d %q, want %q", side, i, resp.StatusCode, body, want)
			}
		}
		if spooled {
			continue // RecordedCalls reads the snapshot, closed
		}
		calls, err := s.RecordedCalls(context.Background(), func(id int64) bool { return id <= 2*n/2 })
		if err != nil || calls != n/2 {
			t.Errorf("side %d: RecordedCalls = %d, %v; want %d", side, calls, err, n/2)
		}
	}
	if reads := idx.store.batches.Loads(); reads > 2*(n/ResponseBatch+2) {
		t.Errorf("%d batches read for 2 × %d answers in recorded order, want about %d", reads, n, 2*(n/ResponseBatch+1))
	}
}
