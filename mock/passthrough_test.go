package mock

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// TestPassthroughToADeadUpstream: a call passed through to an upstream that
// is down gets a 502 naming the error, whichever way it came (plain HTTP to
// a service not mocked, a plain or an intercepted HTTPS miss, a service
// handler's miss), and Stats.PassthroughErrors counts each.
func TestPassthroughToADeadUpstream(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	c := testCA(t)
	s := newServer(t, Config{CA: c, OnMiss: OnMissPassthrough,
		Resolve: resolveTo(dead, "elsewhere.test:80", "mocked.test:80", "api.test:443"),
		Exchanges: []*snapshots.Exchange{
			rec(1, "GET", "http://mocked.test/a", "", "plain"),
			rec(2, "GET", "https://api.test/a", "", "tls"),
		}})
	client := proxyClient(t, startMock(t, s), c.Pool())
	h, err := s.ServiceHandler("mocked.test:80")
	if err != nil {
		t.Fatal(err)
	}
	served := httptest.NewServer(h)
	defer served.Close()

	for i, u := range []string{"http://elsewhere.test/p", "http://mocked.test/b", "https://api.test/b", served.URL + "/b"} {
		resp, body := do(t, client, "GET", u, nil)
		if resp.StatusCode != http.StatusBadGateway || resp.Header.Get(MarkerHeader) != "error" ||
			!strings.Contains(string(body), "replay mock: passthrough to ") || !strings.Contains(string(body), "connection refused") {
			t.Errorf("%s: %d %s=%q %q; want a 502 naming the refused connection", u, resp.StatusCode, MarkerHeader, resp.Header.Get(MarkerHeader), body)
		}
		if got := s.Stats().PassthroughErrors; got != int64(i+1) {
			t.Errorf("after %s: %d passthrough errors, want %d", u, got, i+1)
		}
	}
	if _, body := do(t, client, "GET", "http://mocked.test/a", nil); string(body) != "plain" {
		t.Errorf("a recorded call is still answered: %q", body)
	}
	if st := s.Stats(); st.PassthroughErrors != 4 || st.Misses != 3 {
		t.Errorf("stats %+v; want 4 passthrough errors and 3 misses", st)
	}
}
