package runlog

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// makeRun writes a run file of n results shaped like a real run's: a few
// endpoints, ids in the URLs, random trace ids, latencies of a few
// milliseconds, SQL counted per request.
func makeRun(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.db")
	start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	w, err := snapshots.CreateRun(path, snapshots.RunInfo{Name: "shard", Snapshot: "orders.snap", Target: "http://orders:8080", Started: start})
	if err != nil {
		t.Fatal(err)
	}
	rng := mrand.New(mrand.NewPCG(1, 2))
	endpoints := []string{"GET /orders/{id}", "GET /orders", "POST /orders", "GET /catalog/{sku}"}
	for i := range n {
		ep := endpoints[i%len(endpoints)]
		intended := start.Add(time.Duration(i) * 5 * time.Millisecond)
		sent := intended.Add(time.Duration(rng.IntN(200)) * time.Microsecond)
		trace := make([]byte, 16)
		rand.Read(trace)
		w.Add(&snapshots.Result{
			Phase: snapshots.PhaseLoad, ExchangeID: int64(i%3000 + 1), Endpoint: ep,
			Method: strings.Fields(ep)[0], URL: strings.Replace(strings.Fields(ep)[1], "{id}", fmt.Sprint(rng.IntN(100000)), 1),
			Intended: intended, Sent: sent, Done: sent.Add(time.Duration(1000+rng.IntN(20000)) * time.Microsecond),
			Status: 200, RecordedStatus: 200, Bytes: int64(600 + rng.IntN(200)), TraceID: hex.EncodeToString(trace),
			SQLCounted: true, SQL: []snapshots.SQLCount{{Fingerprint: "SELECT * FROM orders WHERE id = $1", Count: 1 + i%3, Duration: time.Duration(100+rng.IntN(900)) * time.Microsecond}},
		})
	}
	if err := w.Close(snapshots.RunInfo{Ended: start.Add(time.Duration(n) * 5 * time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	return path
}

// encoded is the output of a run that printed the run file at path: its
// report before, a last line after.
func encoded(t *testing.T, path string) string {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("run: 2000 requests, 0 failed\nGET /orders p95 12ms\n")
	if err := EncodeFile(&out, path); err != nil {
		t.Fatal(err)
	}
	out.WriteString("replay: note after the run file\n")
	return out.String()
}

func TestRoundTrip(t *testing.T) {
	path := makeRun(t, 2000)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := encoded(t, path)
	for _, line := range strings.Split(out, "\n") {
		if len(line) > LineWidth && !strings.HasPrefix(line, "===") {
			t.Fatalf("payload line of %d characters", len(line))
		}
	}
	for name, text := range map[string]string{"LF": out, "CRLF": strings.ReplaceAll(out, "\n", "\r\n")} {
		var got bytes.Buffer
		st, err := Decode(strings.NewReader(text), &got)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got.Bytes(), want) || st.Bytes != int64(len(want)) {
			t.Fatalf("%s: decoded %d bytes (stats %d), want the run file's %d", name, got.Len(), st.Bytes, len(want))
		}
		if st.Encoded <= 0 || st.Encoded >= int64(len(want)) {
			t.Errorf("%s: encoded %d characters for a %d-byte run file: not compressed", name, st.Encoded, len(want))
		}
	}
	// The decoded file is a run file with every result.
	dec := filepath.Join(t.TempDir(), "decoded.db")
	var got bytes.Buffer
	if _, err := Decode(strings.NewReader(out), &got); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dec, got.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run, err := snapshots.OpenRun(dec)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if n, err := run.Count(t.Context()); err != nil || n != 2000 {
		t.Fatalf("decoded run: %d results, %v; want 2000", n, err)
	}
}

// TestDecodeRefuses: every way a log can lose or spoil the run file gives
// its own error, never a damaged file read as good.
func TestDecodeRefuses(t *testing.T) {
	out := encoded(t, makeRun(t, 500))
	lines := strings.Split(out, "\n")
	begin := 2 // the line index of the begin marker
	if lines[begin] != Begin {
		t.Fatalf("line %d is %q, want the begin marker", begin, lines[begin])
	}
	end := len(lines) - 3 // then the note and the empty string after the last newline
	if !strings.HasPrefix(lines[end], endPrefix) {
		t.Fatalf("line %d is %q, want the end marker", end, lines[end])
	}
	join := func(ls ...[]string) string {
		var all []string
		for _, l := range ls {
			all = append(all, l...)
		}
		return strings.Join(all, "\n")
	}
	flipped := append([]string(nil), lines...)
	mid := (begin + end) / 2
	// One base64 character of the payload changed (the line's first: 6
	// bits of data, whatever the line holds).
	swap := map[bool]string{false: "B", true: "C"}[flipped[mid][0] == 'B']
	flipped[mid] = swap + flipped[mid][1:]
	for _, c := range []struct {
		name, text string
		want       error
	}{
		{"the fake clientset's log", "fake logs", ErrNoRun},
		{"empty", "", ErrNoRun},
		{"no end line", join(lines[:end]), ErrCut},
		{"cut inside the payload", join(lines[:mid]), ErrCut},
		{"cut inside a line", join(lines[:mid]) + "\n" + lines[mid][:20], ErrCut},
		{"rotated away (no begin line)", join(lines[mid:]), ErrNoRun},
		{"a character changed", join(flipped), ErrDamaged},
		{"a line lost", join(lines[:mid], lines[mid+1:]), ErrDamaged},
		{"a log line interleaved", join(lines[:mid], []string{"replay: warning: something"}, lines[mid:]), ErrDamaged},
		{"a base64-looking line interleaved", join(lines[:mid], []string{"ok"}, lines[mid:]), ErrDamaged},
		{"wrong size in the end line", strings.Replace(out, "bytes=", "bytes=1", 1), ErrDamaged},
		{"wrong checksum in the end line", strings.Replace(out, "sha256=", "sha256=00", 1), ErrDamaged},
		{"two run files", out + out, ErrDamaged},
	} {
		var got bytes.Buffer
		_, err := Decode(strings.NewReader(c.text), &got)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
}

// TestSize measures the output per 10,000 results (the figure in
// docs/scale-out.md) and holds it under a bound a log can carry: kubelet
// rotates a container's log at 10 MiB by default.
func TestSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 10,000-result run file")
	}
	path := makeRun(t, 10000)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := EncodeFile(&out, path); err != nil {
		t.Fatal(err)
	}
	t.Logf("10,000 results: run file %d bytes, printed %d bytes (%.0f%%)", fi.Size(), out.Len(), 100*float64(out.Len())/float64(fi.Size()))
	if out.Len() > 1<<20 {
		t.Errorf("10,000 results print %d bytes, want under 1 MiB", out.Len())
	}
}
