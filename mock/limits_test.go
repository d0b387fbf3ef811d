package mock

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/conntest"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/snapshots"
)

// limitedMock listens as a forward proxy and as a --serve listener of
// api.test:443, bounded by lim; the snapshot holds GET https://api.test/.
func limitedMock(t *testing.T, lim listen.Limits) (*Listening, *ca.CA) {
	t.Helper()
	ex := &snapshots.Exchange{ID: 1, Direction: snapshots.Outbound, Protocol: "https", Service: "api.test:443",
		Method: "GET", URL: "https://api.test/", Status: 200, ResponseBody: []byte("api")}
	authority := testCA(t)
	s := newServer(t, Config{Exchanges: []*snapshots.Exchange{ex}, CA: authority, Limits: lim})
	l, err := s.Listen("127.0.0.1:0", []Serve{{Listen: "127.0.0.1:0", Service: "api.test:443"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return l, authority
}

// TestListenSlowHeaders: a client that sends part of its headers and
// stalls is closed after the read-header timeout: on the forward proxy, on
// a --serve listener, and in an intercepted CONNECT tunnel.
func TestListenSlowHeaders(t *testing.T) {
	const timeout = 300 * time.Millisecond
	l, authority := limitedMock(t, listen.Limits{ReadHeaderTimeout: timeout, IdleTimeout: time.Minute})
	proxy, serve := l.Proxy.Addr().String(), l.Serve[0].Addr().String()
	cases := map[string]func(t *testing.T) time.Duration{
		"proxy": func(t *testing.T) time.Duration {
			return conntest.StallHeaders(t, conntest.Dial(t, proxy), 5*time.Second)
		},
		"serve": func(t *testing.T) time.Duration {
			return conntest.StallHeaders(t, conntest.Dial(t, serve), 5*time.Second)
		},
		"tunnel": func(t *testing.T) time.Duration {
			return conntest.StallHeaders(t, conntest.Tunnel(t, proxy, "api.test:443", authority.Pool()), 5*time.Second)
		},
	}
	conntest.ClosedAfter(t, timeout, cases)
}

// TestListenIdleTimeout: keep-alive connections idle after a request are
// closed after the idle timeout; a plain tunnel to a host not mocked is
// not an HTTP connection of ours and is left alone.
func TestListenIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	l, authority := limitedMock(t, listen.Limits{ReadHeaderTimeout: 200 * time.Millisecond, IdleTimeout: idle})
	proxy, serve := l.Proxy.Addr().String(), l.Serve[0].Addr().String()
	t.Run("serve", func(t *testing.T) {
		c := conntest.Dial(t, serve)
		if code, body := conntest.Request(t, c, "/", "api.test"); code != 200 || body != "api" {
			t.Fatalf("GET / = %d %q", code, body)
		}
		conntest.Closed(t, c, 5*time.Second)
	})
	t.Run("tunnel", func(t *testing.T) {
		conntest.BusyThenIdle(t, conntest.Tunnel(t, proxy, "api.test:443", authority.Pool()), 3, "api.test", "api", idle)
	})
	t.Run("plain tunnel", func(t *testing.T) {
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "other") }))
		defer other.Close()
		c := conntest.Tunnel(t, proxy, other.Listener.Addr().String(), nil)
		time.Sleep(2 * idle) // beyond both timeouts
		if code, body := conntest.Request(t, c, "/", "other.test"); code != 200 || body != "other" {
			t.Fatalf("GET / through a plain tunnel after a pause = %d %q", code, body)
		}
	})
}
