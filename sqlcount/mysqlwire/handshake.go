package mysqlwire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// MariaDB's capabilities past the 32 bits of MySQL's, in the greeting's and
// the handshake response's reserved bytes (when CLIENT_MYSQL, bit 0, is
// clear).
const (
	mariadbProgress        = 1 << 0 // progress reports inside ERR packets
	mariadbComMulti        = 1 << 1 // COM_MULTI
	mariadbBulkOperations  = 1 << 2 // COM_STMT_BULK_EXECUTE
	mariadbCacheMetadata   = 1 << 4 // result sets without their column definitions
	mariadbBulkUnitResults = 1 << 6
)

// Capabilities the proxy takes off the greeting, so that no client uses
// them: compression would hide every statement, and the others change the
// framing of answers in ways this package does not follow.
const (
	strippedCaps = mysql.CLIENT_COMPRESS | mysql.CLIENT_ZSTD_COMPRESSION_ALGORITHM |
		mysql.CLIENT_QUERY_ATTRIBUTES | mysql.CLIENT_OPTIONAL_RESULTSET_METADATA
	strippedMariaDB = mariadbProgress | mariadbComMulti | mariadbBulkOperations | mariadbCacheMetadata | mariadbBulkUnitResults
)

// greeting is a server's Initial Handshake Packet (protocol 10), with the
// offsets of what the proxy rewrites.
type greeting struct {
	raw      []byte // the payload
	caps     uint32
	status   uint16
	scramble []byte // the auth plugin's data, parts 1 and 2
	plugin   string
	capLo    int // offset of the lower capability bytes
	capHi    int // of the upper ones; 0 when absent
	extended int // of MariaDB's extended capabilities; 0 when absent
}

// parseGreeting reads a server's first packet.
func parseGreeting(b []byte) (*greeting, error) {
	if len(b) == 0 {
		return nil, errors.New("empty greeting")
	}
	if b[0] != mysql.ClassicProtocolVersion {
		return nil, fmt.Errorf("greeting of protocol version %d, want 10", b[0])
	}
	g := &greeting{raw: b}
	i := bytes.IndexByte(b[1:], 0)
	if i < 0 {
		return nil, errors.New("greeting: server version not terminated")
	}
	p := 1 + i + 1 + 4 // version, connection id
	if len(b) < p+8+1+2 {
		return nil, errors.New("greeting: too short")
	}
	g.scramble = append(g.scramble, b[p:p+8]...)
	p += 9
	g.capLo = p
	g.caps = uint32(binary.LittleEndian.Uint16(b[p:]))
	p += 2
	if len(b) < p+1+2+2+1+10 {
		return g, nil // a 4.0 server: no more
	}
	g.status = binary.LittleEndian.Uint16(b[p+1:])
	g.capHi = p + 3
	g.caps |= uint32(binary.LittleEndian.Uint16(b[g.capHi:])) << 16
	authLen := int(b[p+5])
	p += 6
	if g.caps&mysql.CLIENT_LONG_PASSWORD == 0 {
		g.extended = p + 6 // MariaDB: 6 bytes of filler, then 4 of capabilities
	}
	p += 10
	if g.caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		n := max(13, authLen-8)
		if len(b) < p+n {
			return nil, errors.New("greeting: auth data cut short")
		}
		g.scramble = append(g.scramble, bytes.TrimRight(b[p:p+n], "\x00")...)
		p += n
	}
	if g.caps&mysql.CLIENT_PLUGIN_AUTH != 0 && p < len(b) {
		name := b[p:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		g.plugin = string(name)
	}
	return g, nil
}

// offer rewrites the greeting for the client: compression and the other
// stripped capabilities off, TLS offered or not as the proxy offers it.
func (g *greeting) offer(tls bool) []byte {
	out := append([]byte(nil), g.raw...)
	caps := g.caps &^ strippedCaps
	if tls {
		caps |= mysql.CLIENT_SSL
	} else {
		caps &^= mysql.CLIENT_SSL
	}
	binary.LittleEndian.PutUint16(out[g.capLo:], uint16(caps))
	if g.capHi > 0 {
		binary.LittleEndian.PutUint16(out[g.capHi:], uint16(caps>>16))
	}
	if g.extended > 0 {
		ext := binary.LittleEndian.Uint32(out[g.extended:])
		binary.LittleEndian.PutUint32(out[g.extended:], ext&^strippedMariaDB)
	}
	return out
}

// response is a client's Handshake Response (protocol 4.1), or the short
// SSL Request that comes before it in TLS.
type response struct {
	raw     []byte
	caps    uint32
	sslOnly bool // the SSL Request: TLS next, the response inside it
	plugin  string
	program string // the program_name connection attribute
}

// sslRequestLen is the length of an SSL Request's payload.
const sslRequestLen = 32

// parseResponse reads a client's answer to the greeting.
func parseResponse(b []byte) (*response, error) {
	if len(b) < 4 {
		return nil, errors.New("handshake response: too short")
	}
	r := &response{raw: b, caps: binary.LittleEndian.Uint32(b)}
	if r.caps&mysql.CLIENT_PROTOCOL_41 == 0 {
		return nil, errors.New("handshake response: the client speaks the protocol of MySQL 4.0, which sqlcount does not follow")
	}
	if len(b) < sslRequestLen {
		return nil, errors.New("handshake response: too short")
	}
	if len(b) == sslRequestLen {
		if r.caps&mysql.CLIENT_SSL == 0 {
			return nil, errors.New("handshake response: no user name")
		}
		r.sslOnly = true
		return r, nil
	}
	r.parseRest(b[sslRequestLen:])
	return r, nil
}

// parseRest reads the user, auth data, database, plugin and attributes
// (what it needs of them); a response cut short leaves the rest empty.
func (r *response) parseRest(b []byte) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return
	}
	b = b[i+1:] // user
	switch {
	case r.caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := lencInt(b)
		if k == 0 || uint64(len(b)-k) < n {
			return
		}
		b = b[k+int(n):]
	case r.caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return
		}
		b = b[1+int(b[0]):]
	default:
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[i+1:]
		}
	}
	if r.caps&mysql.CLIENT_CONNECT_WITH_DB != 0 {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			b = b[i+1:]
		}
	}
	if r.caps&mysql.CLIENT_PLUGIN_AUTH != 0 {
		if i := bytes.IndexByte(b, 0); i >= 0 {
			r.plugin = string(b[:i])
			b = b[i+1:]
		}
	}
	if r.caps&mysql.CLIENT_CONNECT_ATTRS != 0 {
		r.program = connectAttr(b, "program_name")
	}
}

// connectAttr returns the value of one connection attribute.
func connectAttr(b []byte, name string) string {
	total, k := lencInt(b)
	if k == 0 || uint64(len(b)-k) < total {
		return ""
	}
	b = b[k : k+int(total)]
	for len(b) > 0 {
		key, n := lencString(b)
		if n == 0 {
			return ""
		}
		b = b[n:]
		val, n := lencString(b)
		if n == 0 {
			return ""
		}
		b = b[n:]
		if string(key) == name {
			return string(val)
		}
	}
	return ""
}

// forServer rewrites the response (or SSL Request) for the server: the
// stripped capabilities off, CLIENT_SSL as the proxy talks to the server.
func (r *response) forServer(tls bool) []byte {
	out := append([]byte(nil), r.raw...)
	caps := r.caps &^ strippedCaps
	if tls {
		caps |= mysql.CLIENT_SSL
	} else {
		caps &^= mysql.CLIENT_SSL
	}
	binary.LittleEndian.PutUint32(out, caps)
	if caps&mysql.CLIENT_LONG_PASSWORD == 0 {
		// MariaDB's extended capabilities, in the filler's last 4 bytes.
		ext := binary.LittleEndian.Uint32(out[28:])
		binary.LittleEndian.PutUint32(out[28:], ext&^strippedMariaDB)
	}
	return out
}

// sslRequest is the SSL Request the proxy sends a server before TLS, made
// from the client's response.
func (r *response) sslRequest() []byte {
	out := r.forServer(true)
	return out[:sslRequestLen]
}

// errPacket is an ERR packet's payload, without an SQL state (a client in
// its handshake does not know yet whether the server sends one).
func errPacket(code uint16, message string) []byte {
	b := []byte{mysql.ERR_HEADER, byte(code), byte(code >> 8)}
	return append(b, message...)
}
