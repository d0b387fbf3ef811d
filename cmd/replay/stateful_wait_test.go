package main

import (
	"crypto/rand"
	"encoding/hex"
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

// `replay run` in the open model of a recording whose GET reads back the
// id its POST created, against a service answering POSTs after 150 ms: the
// GETs wait for the POSTs' answers, every id is read back, and the notices
// and the run file's settings say how many waited and for how long.
func TestRunOpenModelSaysWhichRequestsWaitedForTheirSource(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			time.Sleep(150 * time.Millisecond)
			b := make([]byte, 8)
			rand.Read(b)
			id := hex.EncodeToString(b) + "-4000-8000-000000000000"
			mu.Lock()
			ids[id] = true
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"`+id+`"}`)
			return
		}
		mu.Lock()
		ok := ids[strings.TrimPrefix(r.URL.Path, "/items/")]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	snap := filepath.Join(t.TempDir(), "items.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	id := "0123456789abcdef-4000-8000-000000000000"
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "svc:8080", Start: t0,
		Method: "POST", URL: "http://svc:8080/items", Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(`{"id":"` + id + `"}`)})
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "svc:8080",
		Start: t0.Add(10 * time.Millisecond), Method: "GET", URL: "http://svc:8080/items/" + id, Status: 200})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "r.run")
	code, _, stderr := replayRun(t, "--snapshot", snap, "--target", srv.URL, "--out", out, "--rate", "20/s", "--duration", "275ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if st := statuses(t, out); st[404] != 0 || st[200] != 6 {
		t.Errorf("statuses %v; want 6 × 200, no 404", st)
	}
	if !strings.Contains(stderr, "3 requests waited for the answer they depend on (up to ") ||
		!strings.Contains(stderr, "never with a stale value") {
		t.Errorf("stderr %q; want the 3 GETs' waits named", stderr)
	}
	run, err := snapshots.OpenRun(out)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	set := run.Info().Settings
	if d, err := time.ParseDuration(set["max_wait_for_source"]); set["waited_for_source"] != "3" || err != nil || d < 50*time.Millisecond {
		t.Errorf("settings %v; want 3 requests waited, about 100 ms", set)
	}
}
