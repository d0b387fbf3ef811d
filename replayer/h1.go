package replayer

import (
	"bufio"
	"context"
	"errors"
	"net"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The fast path: a plain-HTTP/1.1 client in which every worker (a virtual
// user, an open-model worker) owns one keep-alive connection and writes each
// request as one pre-built byte string plus its traceparent. It costs a
// fraction of net/http's CPU per request (docs/benchmarks.md), which matters
// because the generator shares the machine with the target. https targets
// go through net/http.

// h1Conn is one keep-alive connection owned by one worker.
type h1Conn struct {
	nc      net.Conn
	br      *bufio.Reader
	wbuf    []byte
	scratch [128]byte
	reused  bool
	idle    time.Time       // when the last request was sent
	armed   time.Time       // the deadline set on nc; zero: unknown
	rc      syscall.RawConn // nc's, for tryWrite; nil when nc has none
	pr      *pollReader     // br's reader when rc is set: writes a request and reads its answer
}

// stale reports whether a connection idle for a while was closed by the
// server meanwhile (servers close idle keep-alive connections, e.g. Node's
// after 5s), so that it is not used for a request that cannot be resent. It
// peeks at the socket without blocking: one system call, only after a second
// of idleness.
func (h *h1Conn) stale(now time.Time) bool {
	if now.Sub(h.idle) < time.Second {
		return false
	}
	if h.br.Buffered() > 0 {
		return true // bytes nobody asked for: the connection is out of step
	}
	if h.rc == nil {
		return false
	}
	stale := false
	var b [1]byte
	err := h.rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		stale = n > 0 || (n == 0 && rerr == nil) || (rerr != nil && rerr != syscall.EAGAIN && rerr != syscall.EINTR)
		return true
	})
	return stale || err != nil
}

// conn is a worker's client state: its connection, and whether the run's
// cancellation has aborted it.
type conn struct {
	mu      sync.Mutex
	h1      *h1Conn
	aborted bool
	stop    func() bool
	pool    *connPool
	tap     bodyTap // the answer being captured (capture.go), reused
}

// connPool keeps the connections of workers that ended, so that the next
// call of Run (the next slice of a comparison) reuses them instead of
// opening new ones inside its measurements.
type connPool struct {
	mu    sync.Mutex
	conns []*h1Conn
	max   int
	slack time.Duration // how much later than asked a deadline may be (arm)
}

func (p *connPool) get() *h1Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.conns); n > 0 {
		h := p.conns[n-1]
		p.conns = p.conns[:n-1]
		return h
	}
	return nil
}

func (p *connPool) put(h *h1Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.conns) >= p.max {
		h.nc.Close()
		return
	}
	p.conns = append(p.conns, h)
}

func (p *connPool) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, h := range p.conns {
		h.nc.Close()
	}
	p.conns = nil
}

// newConn returns a worker's client state, with an idle connection from
// pool when there is one; canceling ctx aborts the request in flight.
func newConn(ctx context.Context, pool *connPool) *conn {
	c := &conn{pool: pool, h1: pool.get()}
	if c.h1 != nil && c.h1.stale(time.Now()) {
		c.h1.nc.Close()
		c.h1 = nil
	}
	c.stop = context.AfterFunc(ctx, c.abort)
	return c
}

func (c *conn) abort() {
	c.mu.Lock()
	c.aborted = true
	if c.h1 != nil {
		c.h1.nc.SetDeadline(time.Unix(1, 0))
	}
	c.mu.Unlock()
}

// close hands the connection back to the pool (or closes it when the run
// was aborted); the worker is done.
func (c *conn) close() {
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h1 == nil {
		return
	}
	if c.aborted {
		c.h1.nc.Close()
	} else {
		c.pool.put(c.h1)
	}
	c.h1 = nil
}

func (c *conn) drop() {
	c.mu.Lock()
	if c.h1 != nil {
		c.h1.nc.Close()
		c.h1 = nil
	}
	c.mu.Unlock()
}

func (c *conn) dial(ctx context.Context, addr string, deadline time.Time) (*h1Conn, error) {
	d := net.Dialer{Deadline: deadline, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	h := newH1Conn(nc)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted {
		nc.Close()
		return nil, context.Canceled
	}
	c.h1 = h
	return h, nil
}

// newH1Conn returns nc as a fast-path connection.
func newH1Conn(nc net.Conn) *h1Conn {
	h := &h1Conn{nc: nc}
	if sc, ok := nc.(syscall.Conn); ok {
		h.rc, _ = sc.SyscallConn()
	}
	if h.rc != nil {
		h.pr = newPollReader(nc, h.rc)
		h.br = bufio.NewReaderSize(h.pr, loopReadSize)
	} else {
		h.br = bufio.NewReaderSize(nc, loopReadSize)
	}
	return h
}

// h1Template is a request serialized up to its traceparent value.
type h1Template struct {
	head       []byte // request line and headers, ending in "Traceparent: "
	body       []byte
	head2      bool // a HEAD request: the response has no body
	idempotent bool // safe to resend on a fresh connection
}

func newH1Template(t *template) h1Template {
	b := make([]byte, 0, 256)
	b = append(b, t.method...)
	b = append(b, ' ')
	b = append(b, t.uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	b = append(b, "\r\n"...)
	keys := make([]string, 0, len(t.header))
	for k := range t.header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		for _, v := range t.header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if len(t.body) > 0 || t.method == "POST" || t.method == "PUT" || t.method == "PATCH" {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(t.body)), 10)
		b = append(b, "\r\n"...)
	}
	b = append(b, "Traceparent: "...)
	idem := false
	switch t.method {
	case "GET", "HEAD", "OPTIONS", "TRACE":
		idem = true
	}
	if _, ok := t.header["Idempotency-Key"]; ok {
		idem = true
	}
	return h1Template{head: b, body: t.body, head2: t.method == "HEAD", idempotent: idem}
}

// roundTrip sends t with traceparent tp on the worker's connection (dialing
// one when it has none) and reads the whole response by deadline. A request
// that fails on a reused connection before any byte of the response is sent
// again once on a fresh connection when it is idempotent: the server closed
// an idle connection.
func (c *conn) roundTrip(ctx context.Context, addr string, t *h1Template, tp string, now, deadline time.Time, tap *bodyTap) (status int, n int64, err error) {
	return c.resume(ctx, addr, t, tp, now, deadline, -1, tap)
}

// resume is roundTrip for a request that may have been started already:
// when sent ≥ 0, c's connection holds it in wbuf with its deadline set, and
// its first sent bytes are written (the open model's scheduler writes it;
// see openWorker). The first attempt writes the rest, if any, and reads the
// response. tap, when set, sees the answer's headers and body.
func (c *conn) resume(ctx context.Context, addr string, t *h1Template, tp string, now, deadline time.Time, sent int, tap *bodyTap) (status int, n int64, err error) {
	for attempt := 0; ; attempt++ {
		h := c.h1
		if sent < 0 || attempt > 0 || h == nil {
			if h, err = c.ready(ctx, addr, deadline, now); err != nil {
				return 0, 0, err
			}
			h.fill(t, tp)
			sent = 0
		} else if sent < len(h.wbuf) {
			// The writer stopped short and woke the reader with a deadline
			// in the past: set the request's own again.
			h.setDeadline(deadline)
		}
		var keep bool
		var got int
		if sent < len(h.wbuf) {
			if h.pr != nil && h.br.Buffered() == 0 {
				h.pr.pending = h.wbuf[sent:] // written by the first read
			} else {
				_, err = h.nc.Write(h.wbuf[sent:])
			}
		}
		if err == nil {
			status, n, keep, got, err = h.readResponse(t.head2, tap)
		}
		if err == nil {
			if keep {
				h.reused = true
				h.idle = now
			} else {
				c.drop()
			}
			return status, n, nil
		}
		c.drop()
		var ne net.Error
		if !h.reused || got > 0 || attempt > 0 || !t.idempotent || ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
			return 0, 0, err
		}
	}
}

// ready returns c's connection for a request due by deadline, dialing one
// when there is none or the one there went stale, with the deadline set.
func (c *conn) ready(ctx context.Context, addr string, deadline, now time.Time) (*h1Conn, error) {
	h := c.h1
	if h != nil && h.stale(now) {
		c.drop()
		h = nil
	}
	if h == nil {
		var err error
		if h, err = c.dial(ctx, addr, deadline); err != nil {
			return nil, err
		}
	}
	h.arm(deadline, c.pool.slack)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return h, nil
}

// arm makes nc's deadline at least d and at most d plus slack: it sets it
// (to d plus slack) only when the one set is outside that range. Setting a
// deadline moves a runtime timer; with a slack of a thousandth of the
// timeout a worker sets one every few dozen requests instead of every
// request, and a request times out after between its timeout and 0.1% more.
func (h *h1Conn) arm(d time.Time, slack time.Duration) {
	if h.armed.Before(d) || h.armed.After(d.Add(slack)) {
		h.setDeadline(d.Add(slack))
	}
}

// setDeadline sets nc's deadline (read and write) to d and remembers it.
func (h *h1Conn) setDeadline(d time.Time) {
	h.nc.SetDeadline(d)
	h.armed = d
}

// wake sets a read deadline in the past, which wakes a goroutine waiting
// in a read on nc; the deadline set is then unknown.
func (h *h1Conn) wake() {
	h.nc.SetReadDeadline(time.Unix(1, 0))
	h.armed = time.Time{}
}

// fill puts t with traceparent tp in wbuf.
func (h *h1Conn) fill(t *h1Template, tp string) {
	h.wbuf = append(h.wbuf[:0], t.head...)
	h.wbuf = append(h.wbuf, tp...)
	h.wbuf = append(h.wbuf, "\r\n\r\n"...)
	h.wbuf = append(h.wbuf, t.body...)
}

// tryWrite writes wbuf with one non-blocking write system call and returns
// how many bytes went out: it never waits for the connection (a full
// socket buffer, a dead peer), unlike Write.
func (h *h1Conn) tryWrite() (int, error) {
	if h.rc == nil {
		return 0, errors.New("no raw connection")
	}
	var n int
	var werr error
	err := h.rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), h.wbuf)
		return true
	})
	if err == nil {
		err = werr
	}
	return max(n, 0), err
}
