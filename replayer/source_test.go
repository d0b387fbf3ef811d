package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// writeSourceSnapshot writes n inbound POSTs (/a/{i} for even i, /b/{i} for
// odd i, body "body-i"; every tenth /b one's body cut at recording), each
// followed by an outbound call, and returns the snapshot opened.
func writeSourceSnapshot(t *testing.T, n int) *snapshots.Snapshot {
	t.Helper()
	path := filepath.Join(t.TempDir(), "src.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		ep, path := "POST /a/{id}", fmt.Sprintf("/a/%d", i)
		if i%2 == 1 {
			ep, path = "POST /b/{id}", fmt.Sprintf("/b/%d", i)
		}
		body := []byte(fmt.Sprintf("body-%d", i))
		size := int64(len(body))
		if i%20 == 1 {
			size += 100
		}
		id := w.NewID()
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Service: "app:80", Method: "POST",
			URL: "http://app" + path, Start: t0.Add(time.Duration(i) * time.Millisecond), RequestBody: body,
			RequestBodySize: size, Status: 200, ResponseBody: []byte("answer"), ResponseBodySize: 6, Endpoint: ep})
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Service: "up:80", Method: "GET",
			URL: "http://up/x", Start: t0.Add(time.Duration(i) * time.Millisecond), Status: 200, ParentID: id})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { snap.Close() })
	return snap
}

// TestSourceReplaysEverySnapshotRequest: a Replayer reading from a Source
// sends every recorded request of the selected endpoints once, in order
// within each virtual user, with its recorded body, reading the snapshot in
// batches and holding no more than SourceWindow of them; the truncated
// requests are counted per endpoint, and refused without AllowTruncated.
func TestSourceReplaysEverySnapshotRequest(t *testing.T) {
	t.Run("snapshot", func(t *testing.T) { testSourceReplays(t, false) })
	t.Run("spool", func(t *testing.T) { testSourceReplays(t, true) })
}

// testSourceReplays is TestSourceReplaysEverySnapshotRequest, the requests
// copied to a spool first when spooled: the snapshot is closed then, so
// that a request read from it would fail.
func testSourceReplays(t *testing.T, spooled bool) {
	const n = 3*SourceBatch + 100
	snap := writeSourceSnapshot(t, n)
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path+" "+string(b)]++
		mu.Unlock()
	}))
	defer srv.Close()

	src, err := NewSource(ctx, snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	if src.Len() != n {
		t.Fatalf("source of %d requests, want %d", src.Len(), n)
	}
	if spooled {
		f, err := src.Spool(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		snap.Close()
		if size := src.SpoolSize(); size < n*int64(len("POST http://app/a/0 body-0")) {
			t.Errorf("spool of %d bytes for %d requests", size, n)
		}
	}
	if cut := src.Truncated(); len(cut) != 1 || cut["POST /b/{id}"] != int64((n+18)/20) {
		t.Errorf("truncated %v, want POST /b/{id}: %d", cut, (n+18)/20)
	}
	var te *TruncatedError
	if _, err := New(Config{Target: srv.URL, Source: src}); !errors.As(err, &te) {
		t.Fatalf("New without AllowTruncated: %v, want a *TruncatedError", err)
	}
	r := newReplayer(t, Config{Target: srv.URL, Source: src, AllowTruncated: true})
	var s sink
	if _, err := r.Run(ctx, LoadPlan{VUs: 4, Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	for _, res := range s.all() {
		if res.Error != "" {
			t.Fatalf("exchange %d: %s", res.ExchangeID, res.Error)
		}
	}
	if len(s.all()) != n || len(got) != n {
		t.Fatalf("%d results, %d distinct requests received; want %d", len(s.all()), len(got), n)
	}
	for i := range n {
		p := fmt.Sprintf("/a/%d body-%d", i, i)
		if i%2 == 1 {
			p = fmt.Sprintf("/b/%d body-%d", i, i)
		}
		if got[p] != 1 {
			t.Fatalf("%q received %d times, want once", p, got[p])
		}
	}
	if held := src.batches.Len(); held > SourceWindow {
		t.Errorf("the source holds %d batches, want at most %d", held, SourceWindow)
	}
	if reads := src.Reads(); reads < 4 || reads > 6 {
		t.Errorf("%d batches read for one pass of 4, want 4 to 6 (with those read ahead)", reads)
	}
	if !r.Replays(src.ids.At(7)) || r.Replays(src.ids.At(7)+1) {
		t.Error("Replays: wrong about an inbound or an outbound exchange")
	}
}

// TestSourceEndpoints: a Source selects the endpoints given, and names the
// recorded ones when none matches.
func TestSourceEndpoints(t *testing.T) {
	snap := writeSourceSnapshot(t, 40)
	src, err := NewSource(context.Background(), snap, []string{"POST /a*"})
	if err != nil {
		t.Fatal(err)
	}
	if src.Len() != 20 || src.Truncated() != nil {
		t.Errorf("%d requests, truncated %v; want the 20 of POST /a/{id}, none truncated", src.Len(), src.Truncated())
	}
	_, err = NewSource(context.Background(), snap, []string{"GET /x"})
	if !errors.Is(err, ErrNoRequests) || !strings.Contains(err.Error(), "matches none of POST /a/{id}, POST /b/{id}") {
		t.Errorf("no match: %v", err)
	}
}
