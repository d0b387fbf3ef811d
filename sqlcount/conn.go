package sqlcount

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

const (
	// relayBufferSize is the read size of each direction of a goroutine
	// relay (what one read returns is decoded, then written on in one
	// write), and the size of the buffers an event loop keeps what a slow
	// peer has not taken yet in.
	relayBufferSize = 64 << 10
	maxStartupLen   = 10000 // PostgreSQL's MAX_STARTUP_PACKET_LENGTH

	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

// handle serves one client connection: it reads the startup itself, then
// has one of loops relay the connection, or two goroutines when there is
// no loop.
func (p *Proxy) handle(serveCtx context.Context, client net.Conn, loops *loops) {
	accepted := time.Now()
	id := p.connSeq.Add(1)
	log := p.log.With("conn", id, "client", client.RemoteAddr().String())
	// Ending Serve, or the guard, closes the socket; client may become a
	// TLS connection over it below.
	ctx, closeConn := context.WithCancel(serveCtx)
	defer closeConn()
	raw := client
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	defer stop()
	defer raw.Close()

	client, startup, cancel, ok := p.startup(client, accepted, log)
	if !ok {
		return
	}
	if cancel {
		p.forwardCancel(ctx, startup, log)
		return
	}
	p.conns.Add(1)
	app := p.clients.get(startupApp(startup))
	app.connections.Add(1)

	d := net.Dialer{Timeout: p.dialTimeout}
	server, err := d.DialContext(ctx, "tcp", p.upstream)
	if err != nil {
		p.upErrors.Add(1)
		log.Warn("sqlcount: cannot reach upstream", "upstream", p.upstream, "err", err)
		connectionFailure(client, "sqlcount: cannot reach upstream server "+p.upstream+": "+err.Error())
		return
	}
	rawServer := server
	stopServer := context.AfterFunc(ctx, func() { rawServer.Close() })
	defer stopServer()
	defer rawServer.Close()
	if p.upstreamTLS != nil {
		tc, err := p.upstreamHandshake(server)
		if err != nil {
			p.upErrors.Add(1)
			log.Warn("sqlcount: upstream TLS", "upstream", p.upstream, "err", err)
			connectionFailure(client, "sqlcount: upstream server "+p.upstream+": "+err.Error())
			return
		}
		server = tc
	}
	if _, err := server.Write(startup); err != nil {
		log.Debug("sqlcount: upstream write", "err", err)
		return
	}

	s := newSession(p, id)
	s.app = app
	relayed := make(chan struct{})
	defer close(relayed)
	go p.guard(s, accepted, closeConn, relayed, log)
	var cerr, serr error
	looped := false
	// An event loop relays sockets; a TLS side needs its conn's own reads
	// and writes, so such connections take the goroutine relay.
	if !isTLS(client) && !isTLS(server) {
		if l := loops.get(); l != nil {
			cerr, serr, looped = p.relayLoop(ctx, l, client, server, s)
		}
	}
	if !looped {
		cerr, serr = p.relayGoroutines(client, server, s)
	}

	switch {
	case isMalformed(cerr):
		log.Warn("sqlcount: closing connection: malformed client message", "reason", cerr.Error())
	case isMalformed(serr):
		log.Warn("sqlcount: closing connection: malformed server message", "reason", serr.Error())
	case s.client.fr.partial() && serveCtx.Err() == nil:
		log.Info("sqlcount: client disconnected in the middle of a message")
	case s.server.fr.partial() && serveCtx.Err() == nil:
		log.Info("sqlcount: server disconnected in the middle of a message")
	}
}

// startup reads the client's startup (after a TLS handshake when it asks
// for one and ClientTLS is set) within the startup timeout. It returns the
// connection to go on with, the message, whether it is a CancelRequest,
// and false when the connection is to be closed (the reason logged).
func (p *Proxy) startup(client net.Conn, accepted time.Time, log *slog.Logger) (net.Conn, []byte, bool, bool) {
	if p.startupTimeout > 0 {
		client.SetDeadline(accepted.Add(p.startupTimeout))
	}
	startup, cancel, upgrade, err := readStartup(client, p.clientTLS != nil)
	if err == nil && upgrade {
		tc := tls.Server(client, p.clientTLS)
		if err = tc.Handshake(); err != nil {
			log.Info("sqlcount: TLS handshake with client failed", "err", err)
			return nil, nil, false, false
		}
		client = tc
		startup, cancel, _, err = readStartup(client, false)
	}
	if err != nil {
		if isMalformed(err) {
			log.Warn("sqlcount: closing client connection: malformed startup", "reason", err.Error())
		} else if !isDisconnect(err) {
			log.Debug("sqlcount: client startup", "err", err)
		}
		return nil, nil, false, false
	}
	client.SetDeadline(time.Time{})
	return client, startup, cancel, true
}

// connectionFailure tells a client in its startup phase why its connection
// fails, as the server would (FATAL, SQLSTATE 08006).
func connectionFailure(client net.Conn, message string) {
	msg, _ := (&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "08006", Message: message}).Encode(nil)
	client.Write(msg)
}

// relayGoroutines relays client and server, a goroutine per direction,
// until either ends; it returns how each direction ended.
func (p *Proxy) relayGoroutines(client, server net.Conn, s *session) (cerr, serr error) {
	done := make(chan error, 1)
	go func() {
		err := p.relay(server, client, s.server.feed)
		client.Close()
		server.Close()
		done <- err
	}()
	cerr = p.relay(client, server, s.client.feed)
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

func isMalformed(err error) bool {
	var m *malformedError
	return errors.As(err, &m)
}

func isDisconnect(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, os.ErrDeadlineExceeded)
}

// readStartup reads the client's first message, answering GSSENCRequest
// with 'N', and SSLRequest with 'N' too unless offerTLS: then it answers
// 'S' and returns upgrade, and the caller does the TLS handshake and reads
// the startup again. It returns the raw StartupMessage or CancelRequest, and
// whether it is the latter. It reads no byte past the message it returns, so
// nothing sent in the clear before a handshake is taken as sent inside it.
func readStartup(rw io.ReadWriter, offerTLS bool) (msg []byte, cancel, upgrade bool, err error) {
	var hdr [4]byte
	for range 4 {
		if _, err := io.ReadFull(rw, hdr[:]); err != nil {
			return nil, false, false, err
		}
		length := int(int32(binary.BigEndian.Uint32(hdr[:])))
		if length < 8 || length > maxStartupLen {
			return nil, false, false, malformedf("startup packet: bad length %d", length)
		}
		msg := make([]byte, length)
		copy(msg, hdr[:])
		if _, err := io.ReadFull(rw, msg[4:]); err != nil {
			return nil, false, false, err
		}
		code := binary.BigEndian.Uint32(msg[4:8])
		switch code {
		case sslRequestCode, gssEncRequestCode:
			if length != 8 {
				return nil, false, false, malformedf("startup packet: encryption request of length %d", length)
			}
			if code == sslRequestCode && offerTLS {
				if _, err := rw.Write([]byte{'S'}); err != nil {
					return nil, false, false, err
				}
				return nil, false, true, nil
			}
			if _, err := rw.Write([]byte{'N'}); err != nil {
				return nil, false, false, err
			}
			continue
		case cancelRequestCode:
			var cr pgproto3.CancelRequest
			if err := cr.Decode(msg[4:]); err != nil {
				return nil, false, false, malformedf("CancelRequest: %s", err)
			}
			return msg, true, false, nil
		}
		if code>>16 != 3 {
			return nil, false, false, malformedf("startup packet: unknown request code or protocol version %d.%d", code>>16, code&0xffff)
		}
		// Validate with pgproto3, which knows only some 3.x minor versions;
		// the server negotiates the minor version itself.
		body := append([]byte(nil), msg[4:]...)
		binary.BigEndian.PutUint32(body, pgproto3.ProtocolVersion30)
		var sm pgproto3.StartupMessage
		if err := sm.Decode(body); err != nil {
			return nil, false, false, malformedf("startup packet: %s", err)
		}
		return msg, false, false, nil
	}
	return nil, false, false, malformedf("startup packet: too many encryption requests")
}

// upstreamHandshake asks the server for TLS on server and returns the
// encrypted connection; a server that declines is an error.
func (p *Proxy) upstreamHandshake(server net.Conn) (net.Conn, error) {
	server.SetDeadline(time.Now().Add(p.dialTimeout))
	defer server.SetDeadline(time.Time{})
	var req [8]byte
	binary.BigEndian.PutUint32(req[0:], 8)
	binary.BigEndian.PutUint32(req[4:], sslRequestCode)
	if _, err := server.Write(req[:]); err != nil {
		return nil, err
	}
	var answer [1]byte
	if _, err := io.ReadFull(server, answer[:]); err != nil {
		return nil, err
	}
	switch answer[0] {
	case 'S':
	case 'N':
		return nil, errors.New("the server does not accept TLS (it answered the SSLRequest with N)")
	default:
		return nil, fmt.Errorf("unexpected answer %q to the SSLRequest", answer[0])
	}
	cfg := p.upstreamTLS.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName, _, _ = net.SplitHostPort(p.upstream)
	}
	tc := tls.Client(server, cfg)
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

func isTLS(c net.Conn) bool {
	_, ok := c.(*tls.Conn)
	return ok
}

// forwardCancel sends a CancelRequest to the server on a new connection and
// waits until the server has closed it, as the client waits for us.
func (p *Proxy) forwardCancel(ctx context.Context, msg []byte, log *slog.Logger) {
	d := net.Dialer{Timeout: p.dialTimeout}
	server, err := d.DialContext(ctx, "tcp", p.upstream)
	if err != nil {
		log.Debug("sqlcount: cancel request: cannot reach upstream", "err", err)
		return
	}
	defer server.Close()
	server.SetDeadline(time.Now().Add(p.dialTimeout))
	if _, err := server.Write(msg); err != nil {
		log.Debug("sqlcount: cancel request", "err", err)
		return
	}
	io.Copy(io.Discard, server)
}
