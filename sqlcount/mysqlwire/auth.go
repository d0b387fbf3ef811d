package mysqlwire

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// caching_sha2_password's AuthMoreData bytes.
const (
	sha2FastOK      = mysql.CACHE_SHA2_FAST_AUTH // the server's cache knew the password
	sha2Full        = mysql.CACHE_SHA2_FULL_AUTH // the client must send the password itself
	sha2RequestKey  = 2                          // the client asks for the server's RSA key
	authMoreData    = mysql.MORE_DATE_HEADER
	authSwitch      = mysql.EOF_HEADER
	errAuthRejected = authError("the server rejected the authentication")
)

type authError string

func (e authError) Error() string { return string(e) }

// auth relays the authentication exchange, packet by packet, until the
// server's OK (returned) or ERR. It passes every plugin's packets through
// unchanged but one case: caching_sha2_password's full authentication when
// only one side is in TLS. The client sends the password in the clear when
// its side is TLS, which the server does not accept over plain TCP; then
// the proxy encrypts it with the server's RSA key, as a client would. A
// client in plain TCP encrypts it with the key of whoever answers its key
// request; the proxy answers with its own and sends the password to the
// TLS server in the clear.
func (h *handshake) auth() ([]byte, error) {
	plugin := h.r.plugin
	if plugin == "" {
		plugin = h.g.plugin
	}
	scramble := h.g.scramble
	for {
		b, err := h.sp.ReadPacket()
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, errors.New("empty authentication packet")
		}
		switch b[0] {
		case mysql.OK_HEADER:
			if !h.write(h.cp, b) {
				return nil, errors.New("client gone")
			}
			return b, nil
		case mysql.ERR_HEADER:
			h.write(h.cp, b)
			return nil, errAuthRejected
		case authSwitch:
			if len(b) > 1 {
				name, data, _ := bytes.Cut(b[1:], []byte{0})
				plugin, scramble = string(name), bytes.TrimRight(data, "\x00")
			}
		case authMoreData:
			if plugin == mysql.AUTH_CACHING_SHA2_PASSWORD && len(b) == 2 {
				if b[1] == sha2FastOK {
					if !h.write(h.cp, b) {
						return nil, errors.New("client gone")
					}
					continue
				}
				if b[1] == sha2Full && h.clientTLS != h.serverTLS {
					if !h.write(h.cp, b) {
						return nil, errors.New("client gone")
					}
					if err := h.bridgeFullAuth(scramble); err != nil {
						return nil, err
					}
					continue
				}
			}
		}
		// The client answers this one.
		if !h.write(h.cp, b) {
			return nil, errors.New("client gone")
		}
		a, err := h.cp.ReadPacket()
		if err != nil {
			return nil, err
		}
		if !h.write(h.sp, a) {
			return nil, errors.New("server gone")
		}
	}
}

// bridgeFullAuth carries caching_sha2_password's full authentication over
// a proxy in TLS on one side only.
func (h *handshake) bridgeFullAuth(scramble []byte) error {
	a, err := h.cp.ReadPacket()
	if err != nil {
		return err
	}
	if h.clientTLS {
		// The password in the clear, NUL-terminated: encrypt it for the
		// server (packet asks for its key, then sends).
		password := string(bytes.TrimRight(a, "\x00"))
		return h.sp.WritePublicKeyAuthPacket(password, scramble)
	}
	// A plain client to a TLS server.
	if len(a) != 1 || a[0] != sha2RequestKey {
		// Encrypted with a key the client had: the proxy cannot read it.
		h.write(h.sp, a)
		return nil
	}
	key, err := h.w.rsaKey()
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	if !h.write(h.cp, append([]byte{authMoreData}, pemKey...)) {
		return errors.New("client gone")
	}
	enc, err := h.cp.ReadPacket()
	if err != nil {
		return err
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), rand.Reader, key, enc, nil)
	if err != nil {
		return fmt.Errorf("caching_sha2_password: the client's encrypted password: %w", err)
	}
	if len(scramble) == 0 {
		return errors.New("caching_sha2_password: no scramble to decrypt with")
	}
	for i := range plain {
		plain[i] ^= scramble[i%len(scramble)]
	}
	if !h.write(h.sp, plain) { // NUL-terminated, in TLS
		return errors.New("server gone")
	}
	return nil
}

// rsaKey returns the wire's RSA key, made on first use.
func (w *Wire) rsaKey() (*rsa.PrivateKey, error) {
	w.keyOnce.Do(func() { w.key, w.keyErr = rsa.GenerateKey(rand.Reader, 2048) })
	return w.key, w.keyErr
}
