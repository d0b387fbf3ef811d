package conntrack

import (
	"context"
	"net/http"
	"time"

	"github.com/elazarl/goproxy"
)

// Timeouts bound a hijacked connection that carries HTTP requests of its
// own, an intercepted (MITM) CONNECT tunnel, as http.Server bounds the
// connections it serves: the TLS handshake and each request's headers
// must arrive within ReadHeader, and a connection waits at most Idle for
// its next request. Zero fields bound nothing; the zero Timeouts leaves
// the connection alone (plain tunnels, upgrades).
type Timeouts struct {
	ReadHeader time.Duration
	Idle       time.Duration
}

// Watch has the proxy p tell s when each request read from a tunnel with
// Timeouts begins and ends, so that its deadlines follow the requests.
// Call it before adding p's other request handlers: a handler that answers
// a request itself hides it from the ones after.
func (s *Set) Watch(p *goproxy.ProxyHttpServer) {
	p.OnRequest().DoFunc(func(r *http.Request, _ *goproxy.ProxyCtx) (*http.Request, *http.Response) {
		s.mu.Lock()
		c := s.timed[r.RemoteAddr]
		s.mu.Unlock()
		if c != nil {
			c.begin(r.ProtoMajor == 2)
			// goproxy ends a request's context once its response is written
			// (or its upgrade is over).
			context.AfterFunc(r.Context(), c.end)
		}
		return r, nil
	})
}

// timer is the request state of a connection with Timeouts.
type timer struct {
	busy int  // requests in progress
	h2   bool // HTTP/2: frames come and go between requests
	idle bool // waiting for the next request's first byte
}

// arm sets c's read deadline d from now; zero clears it.
func (c *conn) arm(d time.Duration) {
	var t time.Time
	if d > 0 {
		t = time.Now().Add(d)
	}
	_ = c.Conn.SetReadDeadline(t)
}

func (c *conn) begin(h2 bool) {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	c.st.busy++
	c.st.h2 = c.st.h2 || h2
	c.st.idle = false
	c.arm(0)
}

func (c *conn) end() {
	c.tmu.Lock()
	defer c.tmu.Unlock()
	if c.st.busy--; c.st.busy == 0 {
		c.st.idle = true
		c.arm(c.t.Idle)
	}
}

// Read moves an idle connection on when bytes come: an HTTP/1 client has
// ReadHeader from its first byte to send the headers; HTTP/2 frames
// between requests restart the idle wait.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.t != (Timeouts{}) {
		c.tmu.Lock()
		if c.st.busy == 0 && c.st.idle {
			if c.st.h2 {
				c.arm(c.t.Idle)
			} else {
				c.st.idle = false
				c.arm(c.t.ReadHeader)
			}
		}
		c.tmu.Unlock()
	}
	return n, err
}

// ctxKey carries the Writer of a CONNECT request in its context.
type ctxKey struct{}

// Request returns r carrying w, for Untimed.
func (w *Writer) Request(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), ctxKey{}, w))
}

// Untimed drops the Timeouts of the Writer r carries (see Request): the
// CONNECT handler calls it for a plain tunnel, whose bytes are not HTTP
// requests the proxy reads.
func Untimed(r *http.Request) {
	if w, ok := r.Context().Value(ctxKey{}).(*Writer); ok {
		w.Timeouts = Timeouts{}
	}
}
