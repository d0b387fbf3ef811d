package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/snapshots"
)

// mockSnapshot writes a snapshot with outbound calls to an HTTPS and a plain
// HTTP service, and one inbound exchange.
func mockSnapshot(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mock.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	add := func(proto, service, method, u, body string) {
		start = start.Add(time.Millisecond)
		w.AddExchange(&snapshots.Exchange{
			Direction: snapshots.Outbound, Protocol: proto, Service: service, Start: start, Duration: time.Millisecond,
			Method: method, URL: u, RequestHeader: http.Header{},
			Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody: []byte(body), ResponseBodySize: int64(len(body)),
		})
	}
	add("https", "api.test:443", "GET", "https://api.test/v1/items?page=1", `{"items":[1,2]}`)
	add("https", "api.test:443", "GET", "https://api.test/v1/items?page=1", `{"items":[1,2,3]}`)
	add("http", "plain.test:8080", "GET", "http://plain.test:8080/ping", `{"pong":true}`)
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app:80", Start: start,
		Method: "GET", URL: "http://app/x", Status: 200})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMockUsageErrors(t *testing.T) {
	snap := mockSnapshot(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no snapshot", []string{"--listen", "127.0.0.1:0"}, "--snapshot SNAP is required"},
		{"nothing to serve", []string{"--snapshot", snap}, "nothing to serve"},
		{"bad listen", []string{"--snapshot", snap, "--listen", "nohost"}, `listen address "nohost" is not [HOST]:PORT`},
		{"mock without port", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "--mock", "api.test"}, `--mock "api.test": want HOST:PORT`},
		{"on-miss", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "--on-miss", "ignore"}, `--on-miss "ignore": want error or passthrough`},
		{"timing", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "--mock-timing", "fast"}, `--mock-timing "fast": want recorded or none`},
		{"serve without service", []string{"--snapshot", snap, "--serve", "127.0.0.1:0"}, "want LISTEN=HOST:PORT"},
		{"serve bad listen", []string{"--snapshot", snap, "--serve", "x=api.test:443"}, `listen address "x"`},
		{"match", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "--match", "fuzzy"}, `--match: match level "fuzzy": want exact, loose or template`},
		{"bad resolve", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "--resolve", "a=b"}, "want HOST:PORT=ADDR"},
		{"unrecorded mock", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "--ca-dir", t.TempDir(), "--mock", "nope.test:443"},
			"service not in the recording: nope.test:443 (recorded services: api.test:443, plain.test:8080)"},
		{"unrecorded serve", []string{"--snapshot", snap, "--ca-dir", t.TempDir(), "--serve", "127.0.0.1:0=nope.test:80"},
			"nope.test:80 (recorded services: api.test:443, plain.test:8080)"},
		{"positional argument", []string{"--snapshot", snap, "--listen", "127.0.0.1:0", "extra"}, `takes no arguments, got "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"mock"}, tt.args...), streams{out: &stdout, err: &stderr})
			if code != exitUsage {
				t.Errorf("exit code %d; want %d (stderr %q)", code, exitUsage, stderr.String())
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q; want one line containing %q", msg, tt.want)
			}
		})
	}
}

func TestMockCannotRun(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.snap")
	w, err := snapshots.Create(empty, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	notSnap := filepath.Join(dir, "not.snap")
	if err := os.WriteFile(notSnap, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing snapshot", []string{"--snapshot", filepath.Join(dir, "nope.snap"), "--listen", "127.0.0.1:0"}, "nope.snap"},
		{"not a snapshot", []string{"--snapshot", notSnap, "--listen", "127.0.0.1:0"}, "not.snap"},
		{"no outbound", []string{"--snapshot", empty, "--listen", "127.0.0.1:0", "--ca-dir", dir}, "has no outbound exchanges"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"mock"}, tt.args...), streams{out: &stdout, err: &stderr})
			if code != exitError {
				t.Errorf("exit code %d; want %d", code, exitError)
			}
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q; want one line containing %q", msg, tt.want)
			}
		})
	}
}

// TestMockInProcess runs mockRun with a forward proxy and a --serve
// listener, asks both, stops it and reads the summary.
func TestMockInProcess(t *testing.T) {
	caDir := t.TempDir()
	authority, err := ca.LoadOrCreate(caDir)
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncbuf.Buffer
	opts := &mockOptions{
		snapshot: mockSnapshot(t), listen: "127.0.0.1:0", caDir: caDir,
		serve:     []string{"127.0.0.1:0=api.test:443"},
		behaviour: mockBehaviour{onMiss: "error", timing: "none"}, match: "template",
		stdout: &stdout, stderr: &stderr,
	}
	ready := make(chan *mock.Listening, 1)
	opts.onReady = func(r *mock.Listening) { ready <- r }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mockRun(ctx, opts) }()
	var r *mock.Listening
	select {
	case r = <-ready:
	case err := <-done:
		t.Fatalf("mock: %v; stderr %s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("mock did not start within 60s")
	}
	proxyURL, _ := url.Parse("http://" + r.Proxy.Addr().String())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSClientConfig: &tls.Config{RootCAs: authority.Pool()}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	get := func(c *http.Client, u string) (int, string) {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(client, "https://api.test/v1/items?page=1"); code != 200 || body != `{"items":[1,2]}` {
		t.Errorf("proxy hit: %d %q", code, body)
	}
	if code, body := get(client, "http://plain.test:8080/ping"); code != 200 || body != `{"pong":true}` {
		t.Errorf("plain hit: %d %q", code, body)
	}
	if code, body := get(client, "https://api.test/v1/items?page=2"); code != 502 || !strings.Contains(body, `"query page: got 2, recorded 1"`) {
		t.Errorf("miss: %d %q", code, body)
	}
	base := &http.Client{Timeout: 30 * time.Second}
	if code, body := get(base, "http://"+r.Serve[0].Addr().String()+"/v1/items?page=1"); code != 200 || body != `{"items":[1,2,3]}` {
		t.Errorf("--serve (second identical call, second response): %d %q", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("mock: %v", err)
	}
	out := stdout.String()
	for _, want := range []string{
		"mocking api.test:443, plain.test:8080 from " + opts.snapshot + " (on miss: error, timing: none, match: template)",
		"  HTTP_PROXY=" + proxyURL.String() + "\n",
		"  HTTPS_PROXY=" + proxyURL.String() + "\n",
		"  SSL_CERT_FILE=" + filepath.Join(caDir, "bundle.pem") + "\n",
		"serving api.test:443 on " + r.Serve[0].Addr().String() + ": use base URL http://" + r.Serve[0].Addr().String(),
		"mock stopped: 3 calls answered (3 exact, 0 loose, 0 by template), 1 miss, 0 passed through",
		"misses:\n  GET https://api.test/v1/items?page=2\n    closest recorded: GET https://api.test/v1/items?page=1\n    query page: got 2, recorded 1\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}

// TestMockCommand runs the built binary: it prints the environment for the
// app, answers curl through the proxy, and on SIGINT prints the misses.
func TestMockCommand(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not on PATH")
	}
	bin := buildReplay(t)
	caDir := t.TempDir()
	cmd := exec.Command(bin, "mock", "--snapshot", mockSnapshot(t), "--listen", "127.0.0.1:0", "--ca-dir", caDir)
	var stdout, stderr syncbuf.Buffer
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = io.MultiWriter(&stdout, pw), &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()
	defer cmd.Process.Kill()
	env := make(chan map[string]string, 1)
	go func() {
		m := map[string]string{}
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok && strings.ToUpper(k) == k && !strings.Contains(k, " ") {
				m[k] = v
			}
			if strings.HasPrefix(sc.Text(), "Ctrl-C") {
				env <- m
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	var vars map[string]string
	select {
	case vars = <-env:
	case err := <-exited:
		t.Fatalf("mock exited: %v\n%s%s", err, stdout.String(), stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("mock did not start within 60s:\n%s", stdout.String())
	}
	if vars["HTTP_PROXY"] == "" || vars["HTTPS_PROXY"] != vars["HTTP_PROXY"] || vars["SSL_CERT_FILE"] != filepath.Join(caDir, "bundle.pem") {
		t.Fatalf("environment lines: %v\n%s", vars, stdout.String())
	}
	curlGet := func(u string) (string, string) {
		c := exec.Command(curl, "-sS", "--max-time", "60", "--proxy", vars["HTTPS_PROXY"], "--cacert", filepath.Join(caDir, "ca.pem"), "-w", " %{http_code}", u)
		c.Env = append(os.Environ(), "NO_PROXY=", "no_proxy=")
		out, err := c.Output()
		if err != nil {
			t.Fatalf("curl %s: %v", u, err)
		}
		i := strings.LastIndex(string(out), " ")
		if i < 0 {
			t.Fatalf("curl %s: %q has no status", u, out)
		}
		return string(out[i+1:]), string(out[:i])
	}
	if code, body := curlGet("https://api.test/v1/items?page=1"); code != "200" || body != `{"items":[1,2]}` {
		t.Errorf("curl hit: %s %q", code, body)
	}
	code, body := curlGet("https://api.test/v1/items?page=9")
	var miss struct {
		Error, Request, Closest string
		Differences             []string
	}
	if code != "502" || json.Unmarshal([]byte(body), &miss) != nil || miss.Closest != "GET https://api.test/v1/items?page=1" {
		t.Errorf("curl miss: %s %q", code, body)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if errors.As(err, &ee) || err != nil {
			t.Fatalf("exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mock still running 60s after SIGINT")
	}
	out := stdout.String()
	for _, want := range []string{"mock stopped: 1 call answered", ", 1 miss, ", "  GET https://api.test/v1/items?page=9\n", "    query page: got 9, recorded 1\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
