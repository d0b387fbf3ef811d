package recorder

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/conntest"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/internal/syncbuf"
)

// limitedSession is a session around an app with an inbound and an
// outbound proxy bounded by lim; the app's upstream is api.test:443 (HTTPS,
// trusted through UpstreamTLS). It returns the session, the proxy's CA and
// the session's log.
func limitedSession(t *testing.T, lim listen.Limits) (*Session, *ca.CA, *syncbuf.Buffer) {
	t.Helper()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app") }))
	t.Cleanup(app.Close)
	dir := t.TempDir()
	proxyCA, err := ca.LoadOrCreate(filepath.Join(dir, "proxy"))
	if err != nil {
		t.Fatal(err)
	}
	upstreamCA, err := ca.LoadOrCreate(filepath.Join(dir, "upstream"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := upstreamCA.Leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api") }))
	api.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	api.StartTLS()
	t.Cleanup(api.Close)
	logs := &syncbuf.Buffer{}
	s, err := NewSession(SessionConfig{
		Snapshot:    filepath.Join(dir, "s.snap"),
		Inbound:     []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, app.URL)}},
		Outbound:    &SessionOutbound{Listen: "127.0.0.1:0", CA: proxyCA, Resolve: map[string]string{"api.test:443": api.Listener.Addr().String()}},
		UpstreamTLS: &tls.Config{RootCAs: upstreamCA.Pool()},
		Logger:      slog.New(slog.NewTextHandler(logs, nil)),
		Limits:      lim,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Stop(5 * time.Second) })
	return s, proxyCA, logs
}

// TestSessionSlowHeaders: a client that sends part of its headers and
// stalls is closed after the read-header timeout, on the inbound proxy, the
// outbound proxy, and inside an intercepted CONNECT tunnel (before and
// after its TLS handshake).
func TestSessionSlowHeaders(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s, proxyCA, _ := limitedSession(t, listen.Limits{ReadHeaderTimeout: timeout, IdleTimeout: time.Minute})
	in, out := s.InboundAddrs()[0].String(), s.OutboundAddr().String()
	cases := map[string]func(t *testing.T) time.Duration{
		"inbound": func(t *testing.T) time.Duration { return conntest.StallHeaders(t, conntest.Dial(t, in), 5*time.Second) },
		"outbound": func(t *testing.T) time.Duration {
			return conntest.StallHeaders(t, conntest.Dial(t, out), 5*time.Second)
		},
		"tunnel, no TLS handshake": func(t *testing.T) time.Duration {
			return conntest.Closed(t, conntest.Tunnel(t, out, "api.test:443", nil), 5*time.Second)
		},
		"tunnel, in TLS": func(t *testing.T) time.Duration {
			return conntest.StallHeaders(t, conntest.Tunnel(t, out, "api.test:443", proxyCA.Pool()), 5*time.Second)
		},
	}
	conntest.ClosedAfter(t, timeout, cases)
}

// TestSessionIdleTimeout: a keep-alive connection idle after a request is
// closed after the idle timeout, on both proxies and in a tunnel; a
// connection busy with requests is not.
func TestSessionIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	s, proxyCA, _ := limitedSession(t, listen.Limits{ReadHeaderTimeout: time.Minute, IdleTimeout: idle})
	in, out := s.InboundAddrs()[0].String(), s.OutboundAddr().String()
	t.Run("inbound", func(t *testing.T) {
		c := conntest.Dial(t, in)
		if code, body := conntest.Request(t, c, "/", "app.test"); code != 200 || body != "app" {
			t.Fatalf("GET / = %d %q", code, body)
		}
		conntest.Closed(t, c, 5*time.Second)
	})
	t.Run("outbound", func(t *testing.T) {
		c := conntest.Dial(t, out)
		if code, body := conntest.Request(t, c, "https://api.test/", "api.test"); code != 200 || body != "api" {
			t.Fatalf("GET https://api.test/ as a plain proxy request = %d %q", code, body)
		}
		conntest.Closed(t, c, 5*time.Second)
	})
	t.Run("tunnel", func(t *testing.T) {
		// Requests closer together than the idle timeout keep it open.
		conntest.BusyThenIdle(t, conntest.Tunnel(t, out, "api.test:443", proxyCA.Pool()), 4, "api.test", "api", idle)
	})
}

// TestSessionConnectionLimit: with MaxConns 2, a third connection waits
// (its request is not answered) until one of the two closes; the limit is
// logged once however many wait.
func TestSessionConnectionLimit(t *testing.T) {
	s, _, logs := limitedSession(t, listen.Limits{MaxConns: 2})
	in := s.InboundAddrs()[0].String()
	c1, c2 := conntest.Dial(t, in), conntest.Dial(t, in)
	conntest.Request(t, c1, "/", "app.test")
	conntest.Request(t, c2, "/", "app.test")
	c3, c4 := conntest.Dial(t, in), conntest.Dial(t, in)
	for _, c := range []net.Conn{c3, c4} {
		if _, err := c.Write([]byte("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	if conntest.Answered(t, c3, 300*time.Millisecond) || conntest.Answered(t, c4, 10*time.Millisecond) {
		t.Fatal("a connection beyond the limit of 2 was served")
	}
	c1.Close()
	if !conntest.Answered(t, c3, 5*time.Second) && !conntest.Answered(t, c4, 5*time.Second) {
		t.Fatal("no waiting connection was served once one closed")
	}
	if n := strings.Count(logs.String(), "connection limit reached"); n != 1 {
		t.Errorf("the limit was logged %d times; want once:\n%s", n, logs.String())
	}
}
