package pgwire

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

const (
	maxStartupLen = 10000 // PostgreSQL's MAX_STARTUP_PACKET_LENGTH

	sslRequestCode    = 80877103
	gssEncRequestCode = 80877104
	cancelRequestCode = 80877102
)

// Wire is the PostgreSQL wire protocol, for sqlcore.New.
type Wire struct{}

var _ sqlcore.Wire = Wire{}

// Fingerprint fingerprints a shape of this package's scanner (see
// Fingerprint).
func (Wire) Fingerprint(shape string) string { return fingerprintShape(shape) }

// Start reads the client's startup itself (after a TLS handshake when it
// asks for one and ClientTLS is set), forwards a CancelRequest on a
// connection of its own, else connects to the server (in TLS with
// UpstreamTLS) and sends it the startup; authentication passes through the
// relay.
func (Wire) Start(c *sqlcore.Conn) (sqlcore.Link, bool) {
	cfg := c.Config()
	client, startup, cancel, ok := startup(c, cfg)
	if !ok {
		return sqlcore.Link{}, false
	}
	if cancel {
		forwardCancel(c, startup)
		return sqlcore.Link{}, false
	}
	c.Connected(startupApp(startup))
	server, err := c.Dial()
	if err != nil {
		connectionFailure(client, "sqlcount: cannot reach upstream server "+cfg.Upstream+": "+err.Error())
		return sqlcore.Link{}, false
	}
	if cfg.UpstreamTLS != nil {
		tc, err := upstreamHandshake(server, cfg)
		if err != nil {
			c.UpstreamFailed("upstream TLS", err)
			connectionFailure(client, "sqlcount: upstream server "+cfg.Upstream+": "+err.Error())
			return sqlcore.Link{}, false
		}
		server = tc
	}
	if _, err := server.Write(startup); err != nil {
		c.Log.Debug("sqlcount: upstream write", "err", err)
		return sqlcore.Link{}, false
	}
	return sqlcore.Link{Client: client, Server: server, Session: newSession(c.Recorder())}, true
}

// startup reads the client's startup (after a TLS handshake when it asks
// for one and ClientTLS is set) within the startup timeout. It returns the
// connection to go on with, the message, whether it is a CancelRequest,
// and false when the connection is to be closed (the reason logged).
func startup(c *sqlcore.Conn, cfg *sqlcore.Config) (net.Conn, []byte, bool, bool) {
	client, log := c.Client, c.Log
	if cfg.StartupTimeout > 0 {
		client.SetDeadline(c.Accepted.Add(cfg.StartupTimeout))
	}
	startup, cancel, upgrade, err := readStartup(client, cfg.ClientTLS != nil)
	if err == nil && upgrade {
		tc := tls.Server(client, cfg.ClientTLS)
		if err = tc.Handshake(); err != nil {
			log.Info("sqlcount: TLS handshake with client failed", "err", err)
			return nil, nil, false, false
		}
		client = tc
		startup, cancel, _, err = readStartup(client, false)
	}
	if err != nil {
		if sqlcore.IsMalformed(err) {
			log.Warn("sqlcount: closing client connection: malformed startup", "reason", err.Error())
		} else if !sqlcore.IsDisconnect(err) {
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
			return nil, false, false, sqlcore.Malformedf("startup packet: bad length %d", length)
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
				return nil, false, false, sqlcore.Malformedf("startup packet: encryption request of length %d", length)
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
				return nil, false, false, sqlcore.Malformedf("CancelRequest: %s", err)
			}
			return msg, true, false, nil
		}
		if code>>16 != 3 {
			return nil, false, false, sqlcore.Malformedf("startup packet: unknown request code or protocol version %d.%d", code>>16, code&0xffff)
		}
		// Validate with pgproto3, which knows only some 3.x minor versions;
		// the server negotiates the minor version itself.
		body := append([]byte(nil), msg[4:]...)
		binary.BigEndian.PutUint32(body, pgproto3.ProtocolVersion30)
		var sm pgproto3.StartupMessage
		if err := sm.Decode(body); err != nil {
			return nil, false, false, sqlcore.Malformedf("startup packet: %s", err)
		}
		return msg, false, false, nil
	}
	return nil, false, false, sqlcore.Malformedf("startup packet: too many encryption requests")
}

// upstreamHandshake asks the server for TLS on server and returns the
// encrypted connection; a server that declines is an error.
func upstreamHandshake(server net.Conn, cfg *sqlcore.Config) (net.Conn, error) {
	server.SetDeadline(time.Now().Add(cfg.DialTimeout))
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
	tcfg := cfg.UpstreamTLS.Clone()
	if tcfg.ServerName == "" {
		tcfg.ServerName, _, _ = net.SplitHostPort(cfg.Upstream)
	}
	tc := tls.Client(server, tcfg)
	if err := tc.Handshake(); err != nil {
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// forwardCancel sends a CancelRequest to the server on a new connection and
// waits until the server has closed it, as the client waits for us.
func forwardCancel(c *sqlcore.Conn, msg []byte) {
	log := c.Log
	server, err := c.DialExtra()
	if err != nil {
		log.Debug("sqlcount: cancel request: cannot reach upstream", "err", err)
		return
	}
	defer server.Close()
	server.SetDeadline(time.Now().Add(c.Config().DialTimeout))
	if _, err := server.Write(msg); err != nil {
		log.Debug("sqlcount: cancel request", "err", err)
		return
	}
	io.Copy(io.Discard, server)
}

// startupApp returns the application_name of a StartupMessage as
// readStartup returns it (already validated); "" when it has none.
func startupApp(msg []byte) string {
	if len(msg) < 8 {
		return ""
	}
	body := append([]byte(nil), msg[4:]...)
	binary.BigEndian.PutUint32(body, pgproto3.ProtocolVersion30)
	var sm pgproto3.StartupMessage
	if err := sm.Decode(body); err != nil {
		return ""
	}
	return sm.Parameters["application_name"]
}
