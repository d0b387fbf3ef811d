package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/recorder"
)

// wantLoopback fails t unless every address is on 127.0.0.1.
func wantLoopback(t *testing.T, what string, addrs ...net.Addr) {
	t.Helper()
	for _, a := range addrs {
		if host, _, _ := net.SplitHostPort(a.String()); host != "127.0.0.1" {
			t.Errorf("%s listens on %s; want 127.0.0.1 for an address without a host", what, a)
		}
	}
}

// TestListenLoopbackByDefault: a listen address without a host (":0")
// binds 127.0.0.1 on every listening command and flag, and warns of
// nothing.
func TestListenLoopbackByDefault(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer app.Close()
	pg := pgtest.Shared(t).Addr()

	t.Run("record", func(t *testing.T) {
		rec, _ := recordInProcess(t, &recordOptions{out: filepath.Join(t.TempDir(), "s.snap"), caDir: t.TempDir(),
			inbound: []string{":0=" + app.URL}, outbound: ":0", postgres: postgresFlags{spec: ":0=" + pg}})
		wantLoopback(t, "record --inbound/--outbound/--postgres", append(rec.InboundAddrs(), rec.OutboundAddr(), rec.PostgresAddr())...)
	})
	t.Run("mock", func(t *testing.T) {
		r, stderr := mockInProcess(t, ":0", ":0=api.test:443")
		wantLoopback(t, "mock --listen/--serve", r.Proxy.Addr(), r.Serve[0].Addr())
		if s := stderr.String(); strings.Contains(s, "warning") {
			t.Errorf("stderr: %s", s)
		}
	})
	t.Run("sqlcount", func(t *testing.T) {
		addr, stderr := sqlcountInProcess(t, ":0", pg)
		wantLoopback(t, "sqlcount --listen", addr)
		if s := stderr.String(); strings.Contains(s, "warning") {
			t.Errorf("stderr: %s", s)
		}
	})
	snap := mockSnapshot(t)
	// What a side says when its build is given as a URL names where its
	// mock and SQL counter listen.
	listening := regexp.MustCompile(`(?:mock: answering .* on|sqlcount: counting SQL on) (\S+)`)
	check := func(t *testing.T, want int, code int, stderr string) {
		t.Helper()
		got := listening.FindAllStringSubmatch(stderr, -1)
		if len(got) != want {
			t.Fatalf("exit %d; %d listening lines, want %d:\n%s", code, len(got), want, stderr)
		}
		for _, m := range got {
			if host, _, _ := net.SplitHostPort(m[1]); host != "127.0.0.1" {
				t.Errorf("listens on %s; want 127.0.0.1:\n%s", m[1], stderr)
			}
		}
		if strings.Contains(stderr, "reachable from the network") {
			t.Errorf("a loopback listener warned:\n%s", stderr)
		}
	}
	t.Run("run", func(t *testing.T) {
		code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", app.URL, "--out", filepath.Join(t.TempDir(), "r.run"),
			"--duration", "200ms", "--mock", "all", "--mock-listen", ":0", "--postgres", ":0="+pg, "--max-failed", "100%")
		check(t, 2, code, stdout+stderr)
	})
	t.Run("compare", func(t *testing.T) {
		code, stdout, stderr := replayCompare(t, "--snapshot", snap, "--baseline-url", app.URL, "--candidate-url", app.URL,
			"--out", filepath.Join(t.TempDir(), "out"), "--duration", "200ms", "--mock", "all", "--postgres", ":0,:0="+pg)
		check(t, 4, code, stdout+stderr)
	})
}

// TestListenWarnsWhenExposed: an explicit non-loopback host binds it and
// prints one warning line saying what is reachable from the network.
func TestListenWarnsWhenExposed(t *testing.T) {
	warning := regexp.MustCompile(`(?m)^replay: warning: the (.+) listens on 0\.0\.0\.0:\d+, reachable from the network: (.+)$`)
	t.Run("record", func(t *testing.T) {
		var stderr syncbuf.Buffer
		opts := &recordOptions{out: filepath.Join(t.TempDir(), "s.snap"), caDir: t.TempDir(), outbound: "0.0.0.0:0"}
		ready := make(chan *recorder.Session, 1)
		opts.onReady = func(r *recorder.Session) { ready <- r }
		opts.stdout, opts.stderr, opts.bodyLimit, opts.stopTimeout = &syncbuf.Buffer{}, &stderr, 1<<20, 5*time.Second
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- recordRun(ctx, opts) }()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("record: %v", err)
		}
		cancel()
		<-done
		got := warning.FindAllStringSubmatch(stderr.String(), -1)
		if len(got) != 1 || got[0][1] != "outbound proxy" || got[0][2] != "it forwards requests to any host" {
			t.Errorf("stderr lacks one warning for the outbound proxy:\n%s", stderr.String())
		}
	})
	t.Run("mock", func(t *testing.T) {
		_, stderr := mockInProcess(t, "0.0.0.0:0", "")
		got := warning.FindAllStringSubmatch(stderr.String(), -1)
		if len(got) != 1 || got[0][1] != "mock's forward proxy" {
			t.Errorf("stderr lacks one warning for the mock:\n%s", stderr.String())
		}
	})
	t.Run("sqlcount", func(t *testing.T) {
		_, stderr := sqlcountInProcess(t, "0.0.0.0:0", pgtest.Shared(t).Addr())
		got := warning.FindAllStringSubmatch(stderr.String(), -1)
		if len(got) != 1 || got[0][1] != "SQL counter" {
			t.Errorf("stderr lacks one warning for the SQL counter:\n%s", stderr.String())
		}
	})
}

// mockInProcess runs `replay mock` on listen (and serve, when set) until
// the test ends; it returns the listeners and stderr.
func mockInProcess(t *testing.T, listen, serve string) (*mock.Listening, *syncbuf.Buffer) {
	t.Helper()
	var stderr syncbuf.Buffer
	opts := &mockOptions{snapshot: mockSnapshot(t), listen: listen, caDir: t.TempDir(),
		behaviour: mockBehaviour{onMiss: "error", timing: "none"}, match: "template", stdout: &syncbuf.Buffer{}, stderr: &stderr}
	if serve != "" {
		opts.serve = []string{serve}
	}
	ready := make(chan *mock.Listening, 1)
	opts.onReady = func(r *mock.Listening) { ready <- r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mockRun(ctx, opts) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case r := <-ready:
		return r, &stderr
	case err := <-done:
		t.Fatalf("mock: %v; stderr %s", err, stderr.String())
	}
	return nil, nil
}

// sqlcountInProcess runs `replay sqlcount --listen listen` in front of
// upstream until the test ends; it returns its address and stderr.
func sqlcountInProcess(t *testing.T, listen, upstream string) (net.Addr, *syncbuf.Buffer) {
	t.Helper()
	var stderr syncbuf.Buffer
	addrs := make(chan net.Addr, 1)
	opts := &sqlcountOptions{listen: listen, upstream: upstream, caDir: t.TempDir(), out: &syncbuf.Buffer{}, errOut: &stderr,
		onListen: func(a net.Addr) { addrs <- a }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sqlcountRun(ctx, opts) }()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case a := <-addrs:
		return a, &stderr
	case err := <-done:
		t.Fatalf("sqlcount: %v; stderr %s", err, stderr.String())
	}
	return nil, nil
}
