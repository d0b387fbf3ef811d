package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/snapshots"
)

// truncatedApp is a loopback app that records the length of every upload
// it gets, and fetches a report from an upstream through its proxy.
type truncatedApp struct {
	*httptest.Server
	mu      sync.Mutex
	uploads []int
	client  *http.Client
}

func newTruncatedApp(t *testing.T) *truncatedApp {
	a := &truncatedApp{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/upload":
			b, _ := io.ReadAll(r.Body)
			a.mu.Lock()
			a.uploads = append(a.uploads, len(b))
			a.mu.Unlock()
			fmt.Fprintf(w, `{"got":%d}`, len(b))
		case "/report":
			a.mu.Lock()
			client := a.client
			a.mu.Unlock()
			res, err := client.Get("http://reports.test/v1/report")
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			fmt.Fprintf(w, `{"len":%d}`, len(b))
		}
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *truncatedApp) takeUploads() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	u := a.uploads
	a.uploads = nil
	return u
}

// recordTruncated records, with --body-limit 16 through the real recorder,
// three uploads of 64 bytes and one report whose upstream answer is 100
// bytes: four bodies cut at recording, three of them requests.
func recordTruncated(t *testing.T, dir string) (snap string, app *truncatedApp) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("r"), 100))
	}))
	t.Cleanup(upstream.Close)
	app = newTruncatedApp(t)
	snap = filepath.Join(dir, "cut.snap")
	rec, stop := recordInProcess(t, &recordOptions{
		out: snap, inbound: []string{"127.0.0.1:0=" + app.URL}, outbound: "127.0.0.1:0",
		caDir: filepath.Join(dir, "ca"), resolve: []string{"reports.test:80=" + upstream.Listener.Addr().String()},
		bodyLimit: 16,
	})
	proxyURL, _ := url.Parse("http://" + rec.OutboundAddr().String())
	app.mu.Lock()
	app.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
	app.mu.Unlock()
	front := "http://" + rec.InboundAddrs()[0].String()
	for range 3 {
		res, err := http.Post(front+"/upload", "application/octet-stream", bytes.NewReader(bytes.Repeat([]byte("u"), 64)))
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := io.ReadAll(res.Body); string(b) != `{"got":64}` {
			t.Fatalf("upload while recording: %s", b)
		}
		res.Body.Close()
	}
	res, err := http.Get(front + "/report")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(res.Body); string(b) != `{"len":100}` {
		t.Fatalf("report while recording: %s", b)
	}
	res.Body.Close()
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
	app.takeUploads()
	// From now on the app reaches the upstream directly.
	app.mu.Lock()
	app.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, upstream.Listener.Addr().String())
	}}}
	app.mu.Unlock()
	return snap, app
}

// TestReplayTruncatedRequests: requests whose body was cut at recording are
// refused by run and compare before anything starts, unless
// --allow-truncated; then they are replayed cut and every report names
// them per endpoint.
func TestReplayTruncatedRequests(t *testing.T) {
	dir := t.TempDir()
	snap, app := recordTruncated(t, dir)

	refused := "3 recorded requests had their body cut at recording (POST /upload: 3): record again with a larger --body-limit, or pass --allow-truncated to replay them cut and counted apart\n"
	r1 := filepath.Join(dir, "refused.run")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", app.URL, "--out", r1)
	if code != exitError || stdout != "" || stderr != "replay: run: "+snap+": "+refused {
		t.Errorf("run: exit %d, stdout %q, stderr %q; want exit 1 and the one line %q", code, stdout, stderr, refused)
	}
	code, _, stderr = replayCompare(t, "--snapshot", snap, "--baseline-url", app.URL, "--candidate-url", app.URL, "--out", filepath.Join(dir, "cmp"))
	if code != exitError || stderr != "replay: compare: "+snap+": "+refused {
		t.Errorf("compare: exit %d, stderr %q; want exit 1 and %q", code, stderr, refused)
	}
	if _, err := os.Stat(r1); err == nil {
		t.Errorf("a refused run left %s", r1)
	}
	if u := app.takeUploads(); len(u) != 0 {
		t.Errorf("refused runs sent %d uploads", len(u))
	}
	// Endpoints whose requests are whole replay as before.
	code, _, stderr = replayRun(t, "--snapshot", snap, "--target", app.URL, "--out", filepath.Join(dir, "report.run"), "--endpoint", "GET /report")
	if code != 0 {
		t.Errorf("run --endpoint 'GET /report': exit %d: %s", code, stderr)
	}

	r2 := filepath.Join(dir, "allowed.run")
	code, stdout, stderr = replayRun(t, "--snapshot", snap, "--target", app.URL, "--out", r2, "--endpoint", "POST /upload", "--allow-truncated")
	if code != 0 {
		t.Fatalf("run --allow-truncated: exit %d: %s", code, stderr)
	}
	want := "POST /upload: 3 recorded requests replayed with their body cut at recording (--allow-truncated)."
	if !strings.Contains(stdout, want) {
		t.Errorf("report lacks %q:\n%s", want, stdout)
	}
	for _, n := range app.takeUploads() {
		if n != 16 {
			t.Errorf("the app got an upload of %d bytes; want the 16 recorded", n)
		}
	}
	run, err := snapshots.OpenRun(r2)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if got := run.Info().Truncated; len(got) != 1 || got["POST /upload"] != 3 {
		t.Errorf("run file's truncated counts %v; want POST /upload: 3", got)
	}
	code, stdout, stderr = replayCompare(t, "--snapshot", snap, "--baseline-url", app.URL, "--candidate-url", app.URL, "--endpoint", "POST /upload",
		"--allow-truncated", "--duration", "1s", "--warmup", "0s", "--vus", "1", "--format", "json", "--out", filepath.Join(dir, "cmp2"))
	if code == exitError || code == exitUsage || !strings.Contains(stdout, `"notes": [`) || !strings.Contains(stdout, want) {
		t.Errorf("compare --allow-truncated: exit %d, notes lack %q:\n%s%s", code, want, stdout, stderr)
	}
	app.takeUploads()
	for _, f := range []string{"json", "markdown"} {
		code, stdout, stderr := run1(t, "report", r2, "--format", f)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("report --format %s: exit %d, lacks %q:\n%s%s", f, code, want, stdout, stderr)
		}
	}
}

func run1(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return cliRun(t, "", args...)
}

// TestMockTruncatedResponse: the mock refuses to answer from a recorded
// response whose body was cut at recording (502, counted in its summary),
// unless --allow-truncated; then it serves the cut body.
func TestMockTruncatedResponse(t *testing.T) {
	dir := t.TempDir()
	snap, _ := recordTruncated(t, dir)
	for _, allow := range []bool{false, true} {
		var stdout, stderr syncbuf.Buffer
		opts := &mockOptions{
			snapshot: snap, listen: "127.0.0.1:0", caDir: filepath.Join(dir, "ca"),
			behaviour: mockBehaviour{onMiss: "error", timing: "none", allowTruncated: allow}, match: "template",
			stdout: &stdout, stderr: &stderr,
		}
		ready := make(chan *mock.Listening, 1)
		opts.onReady = func(r *mock.Listening) { ready <- r }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mockRun(ctx, opts) }()
		var l *mock.Listening
		select {
		case l = <-ready:
		case err := <-done:
			t.Fatalf("mock: %v; stderr %s", err, stderr.String())
		}
		proxyURL, _ := url.Parse("http://" + l.Proxy.Addr().String())
		tr := &http.Transport{Proxy: http.ProxyURL(proxyURL)}
		res, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get("http://reports.test/v1/report")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		tr.CloseIdleConnections()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		summary := "1 call refused (502): their recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated"
		if allow {
			summary = "1 call was served a recorded response body cut at recording (--allow-truncated)"
			if res.StatusCode != 200 || string(body) != strings.Repeat("r", 16) {
				t.Errorf("allowed: %d %q; want 200 and the 16 bytes recorded", res.StatusCode, body)
			}
		} else if res.StatusCode != 502 || !strings.Contains(string(body), "was cut at recording (16 of 100 bytes kept)") {
			t.Errorf("refused: %d %q; want a 502 that says the body was cut", res.StatusCode, body)
		}
		if !strings.Contains(stdout.String(), summary) {
			t.Errorf("allow %v: summary lacks %q:\n%s", allow, summary, stdout.String())
		}
	}
}

// TestRunMockTruncatedResponse: a run's mock refuses a recorded response
// cut at recording, or serves it with --allow-truncated; the run file's
// wiring counts the calls and the report says which.
func TestRunMockTruncatedResponse(t *testing.T) {
	dir := t.TempDir()
	snap, app := recordTruncated(t, dir)
	for i, allow := range []bool{false, true} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		mockAddr := l.Addr().String()
		l.Close()
		proxyURL, _ := url.Parse("http://" + mockAddr)
		app.mu.Lock()
		app.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
		app.mu.Unlock()
		out := filepath.Join(dir, fmt.Sprintf("mock%d.run", i))
		args := []string{"--snapshot", snap, "--target", app.URL, "--out", out, "--endpoint", "GET /report", "--iterations", "2",
			"--mock", "reports.test:80", "--mock-listen", mockAddr, "--ca-dir", filepath.Join(dir, "ca")}
		want := "Mock: 2 upstream calls were refused (502): the recorded response body was cut at recording; record again with a larger --body-limit, or pass --allow-truncated."
		if allow {
			args = append(args, "--allow-truncated")
			want = "Mock: 2 upstream calls were served a recorded response body cut at recording (--allow-truncated)."
		}
		code, stdout, stderr := replayRun(t, args...)
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("allow %v: exit %d, report lacks %q:\n%s%s", allow, code, want, stdout, stderr)
		}
		run, err := snapshots.OpenRun(out)
		if err != nil {
			t.Fatal(err)
		}
		if w := run.Info().Wiring; w == nil || w.MockTruncated != 2 || w.MockTruncatedServed != allow {
			t.Errorf("allow %v: run file's wiring %+v; want 2 truncated calls, served %v", allow, w, allow)
		}
		run.Close()
	}
}
