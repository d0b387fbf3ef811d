package sqlcore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync/atomic"
	"time"
)

// relayBufferSize is the read size of each direction of a goroutine relay
// (what one read returns is decoded, then written on in one write), and the
// size of the buffers an event loop keeps what a slow peer has not taken yet
// in.
const relayBufferSize = 64 << 10

// Wire is one wire protocol: it takes a client connection through its
// startup (TLS, the server's address, authentication as far as it must) and
// decodes the traffic that follows. Its job ends at "this statement ran, on
// this connection, in this time" (Recorder.Record); attribution,
// fingerprint totals and stats are the Proxy's.
type Wire interface {
	// Start begins client connection c: it dials the server (Conn.Dial)
	// and returns the two connections to relay and the Session that
	// decodes them, or false when the connection ends there (the reason
	// logged, the client told where the protocol allows).
	Start(c *Conn) (Link, bool)
	// Fingerprint returns the fingerprint of a statement shape, as the
	// wire's scanner made it (Recorder.Lookup); it is called once per
	// shape.
	Fingerprint(shape string) string
}

// Link is a started connection: what the proxy relays, and what decodes it.
type Link struct {
	// Client and Server are the connections to relay (either may be a
	// *tls.Conn over the raw one).
	Client, Server net.Conn
	// Session decodes what passes.
	Session Session
}

// Session decodes both directions of one connection. Client and Server are
// each called from one goroutine (not the same one), in stream order, with
// every chunk before it is written on; a MalformedError from either ends the
// connection.
type Session interface {
	// Client decodes bytes from the client; Server bytes from the server.
	// b is valid only during the call.
	Client(b []byte, now time.Time) error
	Server(b []byte, now time.Time) error
	// Ready reports whether startup and authentication are over.
	Ready() bool
	// Busy reports whether the server owes the client an answer.
	Busy() bool
	// Partial reports whether each direction stopped inside a message.
	Partial() (client, server bool)
}

// Conn is a client connection being started, as its Wire sees it.
type Conn struct {
	// ID numbers the proxy's connections from 1 (snapshots.Statement.Conn).
	ID int64
	// Client is the accepted connection.
	Client net.Conn
	// Accepted is when it was accepted.
	Accepted time.Time
	// Log names the connection in every record.
	Log *slog.Logger

	p       *Proxy
	ctx     context.Context
	app     *clientCount
	cleanup []func() // run when the connection ends
}

// Config returns the proxy's settings, defaults applied (DialTimeout,
// StartupTimeout zero for never, Logger never nil).
func (c *Conn) Config() *Config { return &c.p.cfg }

// Context is done when the connection is to end.
func (c *Conn) Context() context.Context { return c.ctx }

// Connected counts the connection (Stats.Connections) under the client
// program's name (Stats.Clients; "" for none): call it once the client has
// said who it is, before Recorder.
func (c *Conn) Connected(app string) {
	c.p.conns.Add(1)
	c.app = c.p.clients.get(app)
	c.app.connections.Add(1)
}

// Dial connects to the upstream server. A failure counts in
// Stats.UpstreamErrors and is logged; the connection is closed when the
// client's ends.
func (c *Conn) Dial() (net.Conn, error) {
	d := net.Dialer{Timeout: c.p.dialTimeout}
	server, err := d.DialContext(c.ctx, "tcp", c.p.upstream)
	if err != nil {
		c.UpstreamFailed("cannot reach upstream", err)
		return nil, err
	}
	stop := context.AfterFunc(c.ctx, func() { server.Close() })
	c.cleanup = append(c.cleanup, func() { stop(); server.Close() })
	return server, nil
}

// DialExtra opens another connection to the server (a PostgreSQL
// CancelRequest's), closed by the caller; it counts no error.
func (c *Conn) DialExtra() (net.Conn, error) {
	d := net.Dialer{Timeout: c.p.dialTimeout}
	return d.DialContext(c.ctx, "tcp", c.p.upstream)
}

// UpstreamFailed counts a connection that could not be opened to the server
// (Stats.UpstreamErrors) and logs why.
func (c *Conn) UpstreamFailed(what string, err error) {
	c.p.upErrors.Add(1)
	c.Log.Warn("sqlcount: "+what, "upstream", c.p.upstream, "err", err)
}

// StartupTimedOut counts a client closed for not authenticating in time
// (Stats.StartupClosed) and logs it.
func (c *Conn) StartupTimedOut() {
	c.p.startupClosed.Add(1)
	c.Log.Info("sqlcount: closing client connection: not authenticated in time", "startup_timeout", c.p.startupTimeout.String())
}

// Recorder returns the recorder of the connection's statements.
func (c *Conn) Recorder() *Recorder { return &Recorder{p: c.p, conn: c.ID, app: c.app} }

// handle serves one client connection: its wire starts it, then one of loops
// relays it, or two goroutines when there is no loop.
func (p *Proxy) handle(serveCtx context.Context, client net.Conn, loops *loops) {
	accepted := time.Now()
	id := p.connSeq.Add(1)
	log := p.log.With("conn", id, "client", client.RemoteAddr().String())
	// Ending Serve, or the guard, closes the sockets; the wire may put TLS
	// over them.
	ctx, closeConn := context.WithCancel(serveCtx)
	defer closeConn()
	raw := client
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	defer raw.Close()

	c := &Conn{ID: id, Client: client, Accepted: accepted, Log: log, p: p, ctx: ctx}
	defer func() {
		for _, f := range c.cleanup {
			f()
		}
	}()
	lk, ok := p.wire.Start(c)
	if !ok {
		return
	}
	if ctx.Err() != nil {
		return
	}
	fs := &feeds{s: lk.Session}
	fs.last.Store(time.Now().UnixNano())
	relayed := make(chan struct{})
	defer close(relayed)
	go p.guard(fs, accepted, closeConn, relayed, log)
	var cerr, serr error
	looped := false
	// An event loop relays sockets; a TLS side needs its conn's own reads
	// and writes, so such connections take the goroutine relay.
	if !isTLS(lk.Client) && !isTLS(lk.Server) {
		if l := loops.get(); l != nil {
			cerr, serr, looped = p.relayLoop(ctx, l, lk.Client, lk.Server, fs)
		}
	}
	if !looped {
		cerr, serr = p.relayGoroutines(lk.Client, lk.Server, fs)
	}

	cpart, spart := lk.Session.Partial()
	switch {
	case IsMalformed(cerr):
		log.Warn("sqlcount: closing connection: malformed client message", "reason", cerr.Error())
	case IsMalformed(serr):
		log.Warn("sqlcount: closing connection: malformed server message", "reason", serr.Error())
	case cpart && serveCtx.Err() == nil:
		log.Info("sqlcount: client disconnected in the middle of a message")
	case spart && serveCtx.Err() == nil:
		log.Info("sqlcount: server disconnected in the middle of a message")
	}
}

// feeds passes what is relayed to a session, noting when bytes last came
// either way (for the idle timeout).
type feeds struct {
	s    Session
	last atomic.Int64 // Unix nanoseconds
}

func (f *feeds) client(b []byte, now time.Time) error {
	f.last.Store(now.UnixNano())
	return f.s.Client(b, now)
}

func (f *feeds) server(b []byte, now time.Time) error {
	f.last.Store(now.UnixNano())
	return f.s.Server(b, now)
}

// relayGoroutines relays client and server, a goroutine per direction,
// until either ends; it returns how each direction ended.
func (p *Proxy) relayGoroutines(client, server net.Conn, fs *feeds) (cerr, serr error) {
	done := make(chan error, 1)
	go func() {
		err := p.relay(server, client, fs.server)
		client.Close()
		server.Close()
		done <- err
	}()
	cerr = p.relay(client, server, fs.client)
	client.Close()
	server.Close()
	return cerr, <-done
}

// relay copies src to dst, feeding every chunk to the decoder before it is
// written on, until either side fails or the decoder finds the stream
// malformed.
func (p *Proxy) relay(src, dst net.Conn, feed func([]byte, time.Time) error) error {
	bp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bp)
	buf := *bp
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if ferr := feed(buf[:n], time.Now()); ferr != nil {
				return ferr
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
	}
}

// MalformedError reports a malformed stream: the connection ends.
type MalformedError struct{ Reason string }

func (e *MalformedError) Error() string { return e.Reason }

// Malformedf returns a MalformedError.
func Malformedf(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

// IsMalformed reports whether err is (or wraps) a MalformedError.
func IsMalformed(err error) bool {
	var m *MalformedError
	return errors.As(err, &m)
}

// IsDisconnect reports whether err is a peer gone or a deadline passed.
func IsDisconnect(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}

func isTLS(c net.Conn) bool {
	_, ok := c.(*tls.Conn)
	return ok
}
