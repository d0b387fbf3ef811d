package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// boundedExchanges is the size of the snapshot TestRunBoundedMemory
// replays: big enough that holding its bodies (boundedBody bytes of request
// and of response, inbound and outbound: 4 per exchange) shows far above
// the bound.
const (
	boundedExchanges = 24000
	boundedBody      = 2048
	// boundedHeap is the most the Go heap may grow during `replay run` or
	// `replay compare` over that snapshot: the snapshot's bodies alone come
	// to 4 × 24,000 × 2 KiB = 188 MiB.
	boundedHeap = 96 << 20
)

// writeBigSnapshot writes n inbound POST exchanges with a request and a
// response body of size bytes, each with an outbound call answered with
// size bytes.
func writeBigSnapshot(t *testing.T, path string, n, size int) {
	t.Helper()
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		body := bytes.Repeat([]byte{'a' + byte(i%26)}, size)
		id := w.NewID()
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Protocol: "http", Service: "app.test:80",
			Start: t0.Add(time.Duration(i) * time.Millisecond), Method: "POST", URL: fmt.Sprintf("http://app.test/items/%d", i),
			RequestHeader: http.Header{"Content-Type": {"text/plain"}}, RequestBody: body, RequestBodySize: int64(size),
			Status: 200, ResponseBody: body, ResponseBodySize: int64(size), Endpoint: "POST /items/{id}"})
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "http", Service: "stock.test:80",
			Start: t0.Add(time.Duration(i)*time.Millisecond + time.Microsecond), Method: "GET", URL: fmt.Sprintf("http://stock.test/s/%d", i%500),
			Status: 200, ResponseBody: body, ResponseBodySize: int64(size), ParentID: id})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// peakHeap samples the Go heap until stop is called and returns its
// largest growth over what it was at the start.
func peakHeap() (stop func() uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > base && ms.HeapAlloc-base > peak.Load() {
				peak.Store(ms.HeapAlloc - base)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		wg.Wait()
		return peak.Load()
	}
}

// TestRunBoundedMemory: `replay run` (with a mock) and `replay compare` over
// a snapshot whose bodies come to 188 MiB send every recorded request once,
// with the Go heap growing by less than 96 MiB: the requests, their bodies
// and the mock's answers are read from the snapshot as needed, not all
// held.
func TestRunBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and replays a snapshot of 48,000 exchanges")
	}
	dir := t.TempDir()
	snap := filepath.Join(dir, "big.snap")
	writeBigSnapshot(t, snap, boundedExchanges, boundedBody)
	var served atomic.Int64
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		if n != boundedBody {
			http.Error(w, fmt.Sprintf("body of %d bytes", n), http.StatusBadRequest)
			return
		}
		served.Add(1)
		w.Write([]byte("ok"))
	}))
	defer app.Close()
	common := []string{"--snapshot", snap, "--vus", "8"}
	for _, tc := range []struct {
		name   string
		args   []string
		sent   int64  // at least
		tmpdir string // TMPDIR, where the spools go
	}{
		// With a mock: the app makes none of the recorded calls (a wiring
		// fault: exit 1), but the mock indexes them all.
		{"run", append([]string{"run", "--target", app.URL, "--out", filepath.Join(dir, "run.db"), "--iterations", "1",
			"--mock", "all", "--ca-dir", filepath.Join(dir, "ca")}, common...), boundedExchanges, ""},
		{"compare", append([]string{"compare", "--baseline-url", app.URL, "--candidate-url", app.URL, "--out", filepath.Join(dir, "cmp"), "--duration", "4s"}, common...), 2000, ""},
		// Every answer checked against the recorded one: "ok" differs
		// from each (exit 99), read for its hash.
		{"check-responses", append([]string{"run", "--target", app.URL, "--out", filepath.Join(dir, "check.db"), "--iterations", "1",
			"--check-responses"}, common...), boundedExchanges, ""},
		// No spool can be made: every request and answer is read from the
		// snapshot during the load, and stderr says so.
		{"no-spool", append([]string{"run", "--target", app.URL, "--out", filepath.Join(dir, "nospool.db"), "--iterations", "1",
			"--mock", "all", "--ca-dir", filepath.Join(dir, "ca")}, common...), boundedExchanges, filepath.Join(dir, "missing")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tmpdir != "" {
				t.Setenv("TMPDIR", tc.tmpdir)
			}
			served.Store(0)
			stop := peakHeap()
			code, stdout, stderr := cliRun(t, "", tc.args...)
			peak := stop()
			want, why := exitOK, ""
			switch tc.name {
			case "check-responses":
				want = exitRegression
			case "run", "no-spool":
				want, why = exitError, "the figures do not measure what they claim"
			case "compare":
				if code == exitError { // a machine too busy to judge the one endpoint
					why = "no endpoint could be judged"
					want = exitError
				}
			}
			if code != want || !strings.Contains(stderr, why) {
				t.Fatalf("exit %d, want %d (%q):\n%s\n%s", code, want, why, stdout, stderr)
			}
			if n := served.Load(); n < tc.sent || (tc.name == "run" && n != tc.sent) {
				t.Errorf("the app got %d requests with their recorded body, want %d", n, tc.sent)
			}
			if warned := strings.Contains(stderr, "replay: warning: no spool: "); warned != (tc.tmpdir != "") {
				t.Errorf("spool warning %v, want %v: %s", warned, tc.tmpdir != "", stderr)
			}
			t.Logf("heap grew by %d MiB at most", peak>>20)
			if peak > boundedHeap {
				t.Errorf("the heap grew by %d MiB, want under %d MiB: the snapshot is held in memory", peak>>20, boundedHeap>>20)
			}
		})
	}
}
