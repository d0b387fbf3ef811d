package mysqlwire

import (
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/packet"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// Wire is the MySQL wire protocol (MySQL and MariaDB), for sqlcore.New.
// Use it through a pointer; its zero value is ready.
type Wire struct {
	keyOnce sync.Once
	key     *rsa.PrivateKey // for caching_sha2_password between a plain client and a TLS server
	keyErr  error
}

var _ sqlcore.Wire = (*Wire)(nil)

// New returns the MySQL wire protocol.
func New() *Wire { return &Wire{} }

// Fingerprint fingerprints a shape of this package's scanner.
func (*Wire) Fingerprint(shape string) string { return fingerprintShape(shape) }

// Start connects to the server and takes the client through the handshake
// packet by packet (see the package's doc): the greeting with the
// capabilities this package does not follow taken off, TLS on either side
// as configured, and authentication up to the server's OK; then the
// connection is relayed.
func (w *Wire) Start(c *sqlcore.Conn) (sqlcore.Link, bool) {
	cfg := c.Config()
	h := &handshake{w: w, c: c, cfg: cfg}
	defer h.release()
	if cfg.StartupTimeout > 0 {
		c.Client.SetDeadline(c.Accepted.Add(cfg.StartupTimeout))
	}
	s, ok := h.run()
	if !ok {
		return sqlcore.Link{}, false
	}
	h.client.SetDeadline(time.Time{})
	h.server.SetDeadline(time.Time{})
	return sqlcore.Link{Client: h.client, Server: h.server, Session: s}, true
}

// handshake is the start of one connection.
type handshake struct {
	w   *Wire
	c   *sqlcore.Conn
	cfg *sqlcore.Config

	client, server net.Conn     // raw, or TLS over it
	cp, sp         *packet.Conn // the packet layer over each
	g              *greeting
	r              *response
	clientTLS      bool
	serverTLS      bool
	pcs            []*packet.Conn // every packet layer taken, to give back
}

// packetConns keeps packet layers between handshakes: each holds a 16 KiB
// buffer, which allocated afresh for both sides of every connection made
// the garbage collector the largest cost of a client that connects for
// every query (BenchmarkConnectionChurn).
var packetConns = sync.Pool{New: func() any { return packet.NewTLSConn(nil) }}

// packetConn returns a packet layer over c, unbuffered: nothing past a
// packet is read, so that the relay gets every byte after the handshake.
// The handshake never turns compression on, so a layer given back needs
// only its connection and sequence reset.
func (h *handshake) packetConn(c net.Conn) *packet.Conn {
	pc := packetConns.Get().(*packet.Conn)
	pc.Conn, pc.Sequence = c, 0
	h.pcs = append(h.pcs, pc)
	return pc
}

// release gives the packet layers back once the handshake is over.
func (h *handshake) release() {
	for _, pc := range h.pcs {
		pc.Conn = nil
		packetConns.Put(pc)
	}
	h.pcs = nil
}

// run does the handshake; it returns the session to relay with, or false
// when the connection ends (the reason logged, the client told).
func (h *handshake) run() (*session, bool) {
	c := h.c
	h.client = c.Client
	h.cp = h.packetConn(h.client)
	server, err := c.Dial()
	if err != nil {
		h.fail(2003, "sqlcount: cannot reach upstream server "+h.cfg.Upstream+": "+err.Error())
		return nil, false
	}
	h.server = server
	if h.cfg.StartupTimeout > 0 {
		server.SetDeadline(c.Accepted.Add(h.cfg.StartupTimeout))
	}
	h.sp = h.packetConn(server)
	if !h.greet() || !h.respond() {
		return nil, false
	}
	okPkt, err := h.auth()
	if err != nil {
		h.logEnd("authentication", err)
		return nil, false
	}
	caps := h.r.caps & h.g.caps
	_, status := okInfo(okPkt)
	return newSession(c.Recorder(), caps, status), true
}

// greet reads the server's greeting and offers the client its rewrite.
func (h *handshake) greet() bool {
	b, err := h.sp.ReadPacket()
	if err != nil {
		h.logEnd("server greeting", err)
		return false
	}
	if len(b) > 0 && b[0] == mysql.ERR_HEADER {
		// The server refuses the connection (too many, host blocked): the
		// client hears it as the server said it.
		h.write(h.cp, b)
		h.c.Log.Info("sqlcount: the server refused the connection", "reason", string(b[min(len(b), 3):]))
		return false
	}
	if h.g, err = parseGreeting(b); err != nil {
		h.c.Log.Warn("sqlcount: closing connection: malformed server greeting", "reason", err.Error())
		h.fail(2027, "sqlcount: malformed server greeting: "+err.Error())
		return false
	}
	if h.cfg.UpstreamTLS != nil && h.g.caps&mysql.CLIENT_SSL == 0 {
		err := errors.New("the server does not accept TLS (its greeting has no CLIENT_SSL)")
		h.c.UpstreamFailed("upstream TLS", err)
		h.fail(2026, "sqlcount: upstream server "+h.cfg.Upstream+": "+err.Error())
		return false
	}
	return h.write(h.cp, h.g.offer(h.cfg.ClientTLS != nil))
}

// respond reads the client's response (in TLS when it asks for it), and
// sends it to the server (in TLS when the proxy is to).
func (h *handshake) respond() bool {
	r, ok := h.readResponse()
	if !ok {
		return false
	}
	if r.sslOnly {
		if h.cfg.ClientTLS == nil {
			h.c.Log.Warn("sqlcount: closing client connection: it asks for TLS, which was not offered")
			return false
		}
		tc := tls.Server(h.client, h.cfg.ClientTLS)
		if err := tc.Handshake(); err != nil {
			h.c.Log.Info("sqlcount: TLS handshake with client failed", "err", err)
			return false
		}
		seq := h.cp.Sequence
		h.client, h.cp, h.clientTLS = tc, h.packetConn(tc), true
		h.cp.Sequence = seq
		if r, ok = h.readResponse(); !ok {
			return false
		}
		if r.sslOnly {
			h.c.Log.Warn("sqlcount: closing connection: malformed handshake response", "reason", "a second SSL request")
			return false
		}
	}
	h.r = r
	h.c.Connected(r.program)
	if h.cfg.UpstreamTLS != nil {
		if err := h.upstreamTLS(); err != nil {
			h.c.UpstreamFailed("upstream TLS", err)
			h.fail(2026, "sqlcount: upstream server "+h.cfg.Upstream+": "+err.Error())
			return false
		}
	}
	return h.write(h.sp, r.forServer(h.serverTLS))
}

func (h *handshake) readResponse() (*response, bool) {
	b, err := h.cp.ReadPacket()
	if err != nil {
		h.logEnd("client handshake response", err)
		return nil, false
	}
	r, err := parseResponse(b)
	if err != nil {
		h.c.Log.Warn("sqlcount: closing client connection: malformed handshake response", "reason", err.Error())
		h.fail(1043, "sqlcount: "+err.Error())
		return nil, false
	}
	return r, true
}

// upstreamTLS asks the server for TLS with an SSL Request and puts the
// server connection in TLS.
func (h *handshake) upstreamTLS() error {
	if err := h.sp.WritePacket(withHeader(h.r.sslRequest())); err != nil {
		return err
	}
	tcfg := h.cfg.UpstreamTLS.Clone()
	if tcfg.ServerName == "" {
		tcfg.ServerName, _, _ = net.SplitHostPort(h.cfg.Upstream)
	}
	tc := tls.Client(h.server, tcfg)
	if err := tc.Handshake(); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	seq := h.sp.Sequence
	h.server, h.sp, h.serverTLS = tc, h.packetConn(tc), true
	h.sp.Sequence = seq
	return nil
}

// write sends a payload as a packet of the side's sequence.
func (h *handshake) write(pc *packet.Conn, payload []byte) bool {
	if err := pc.WritePacket(withHeader(payload)); err != nil {
		h.logEnd("handshake write", err)
		return false
	}
	return true
}

// fail tells the client why its connection fails, as an ERR packet of its
// handshake.
func (h *handshake) fail(code uint16, message string) {
	h.cp.WritePacket(withHeader(errPacket(code, message)))
}

// logEnd logs why the handshake ended: past the startup timeout, as such.
// (The packet layer's errors do not unwrap to the net.Error of a deadline,
// so the clock tells.)
func (h *handshake) logEnd(what string, err error) {
	if t := h.cfg.StartupTimeout; t > 0 && !time.Now().Before(h.c.Accepted.Add(t)) {
		h.c.StartupTimedOut()
		return
	}
	h.c.Log.Debug("sqlcount: "+what, "err", reason(err))
}

// reason is an error's text without the stack traces the packet layer's
// errors carry: its lines that are messages, joined.
func reason(err error) string {
	var parts []string
	for _, line := range strings.Split(err.Error(), "\n") {
		if line == "" || line[0] == '\t' || !strings.Contains(line, " ") {
			continue
		}
		parts = append(parts, line)
	}
	if len(parts) == 0 {
		return err.Error()
	}
	return strings.Join(parts, ": ")
}

// withHeader returns payload behind the 4 bytes packet.Conn.WritePacket
// fills in.
func withHeader(payload []byte) []byte {
	b := make([]byte, 4+len(payload))
	copy(b[4:], payload)
	return b
}

// lencInt reads a length-encoded integer, as mysql.LengthEncodedInt does but
// bounds-checked: n is 0 when b is too short to hold it (that function
// indexes past a cut one). A NULL (0xfb) reads as 0 in one byte.
func lencInt(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case 0xfb:
		return 0, 1
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	default:
		return uint64(b[0]), 1
	}
	if len(b) < n {
		return 0, 0
	}
	for i := n - 1; i >= 1; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v, n
}

// lencString reads a length-encoded string; n is 0 when b is too short.
func lencString(b []byte) (s []byte, n int) {
	l, k := lencInt(b)
	if k == 0 || uint64(len(b)-k) < l {
		return nil, 0
	}
	return b[k : k+int(l)], k + int(l)
}
