package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"strings"
	"time"
)

// Leaf certificates are valid 397 days (the most Apple platforms accept) and
// renewed when less than a day is left.
const (
	leafValidity = 397 * 24 * time.Hour
	leafRenew    = 24 * time.Hour
)

// maxLeaves bounds the leaf cache by default; an app calls a handful of
// hosts, but a proxy left running must not grow without end.
const maxLeaves = 4096

// evictLocked drops a random eighth of the signed leaves; c.mu is held.
func (c *CA) evictLocked() {
	n := len(c.leaves) / 8
	for name, call := range c.leaves {
		if n <= 0 {
			return
		}
		select {
		case <-call.done:
			delete(c.leaves, name)
			n--
		default: // still being signed: its waiters need it
		}
	}
}

// leafCall is one signing of a leaf, shared by all callers asking for the
// same host while it runs.
type leafCall struct {
	done chan struct{}
	cert *tls.Certificate
	err  error
}

// Leaf returns a certificate for host (a DNS name or an IP address, with or
// without a port), signed by the CA, with the CA certificate as its chain.
// Leaves are cached per host and signed once however many callers ask at the
// same time.
func (c *CA) Leaf(host string) (*tls.Certificate, error) {
	name, err := normalizeHost(host)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if call, ok := c.leaves[name]; ok {
		c.mu.Unlock()
		<-call.done
		if call.err == nil && time.Until(call.cert.Leaf.NotAfter) > leafRenew {
			return call.cert, nil
		}
		c.mu.Lock()
		if c.leaves[name] == call {
			delete(c.leaves, name)
		}
		c.mu.Unlock()
		if call.err != nil {
			return nil, call.err
		}
		return c.Leaf(name)
	}
	call := &leafCall{done: make(chan struct{})}
	if len(c.leaves) >= c.maxLeaves {
		c.evictLocked()
	}
	c.leaves[name] = call
	c.mu.Unlock()

	call.cert, call.err = c.sign(name)
	if call.err != nil {
		c.mu.Lock()
		delete(c.leaves, name)
		c.mu.Unlock()
	}
	close(call.done)
	return call.cert, call.err
}

// normalizeHost strips a port and IPv6 brackets, lower-cases the name and
// drops a trailing dot.
func normalizeHost(host string) (string, error) {
	h := strings.TrimSpace(host)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), ".")
	h = strings.ToLower(h)
	if h == "" {
		return "", fmt.Errorf("leaf certificate: empty host name in %q", host)
	}
	if net.ParseIP(h) != nil {
		return h, nil
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' || r == '_' || r == '*') {
			return "", fmt.Errorf("leaf certificate: %q is not a host name or IP address", host)
		}
	}
	return h, nil
}

// sign makes a new leaf for name (normalized).
func (c *CA) sign(name string) (*tls.Certificate, error) {
	c.signed.Add(1)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("leaf certificate for %s: %w", name, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("leaf certificate for %s: %w", name, err)
	}
	now := time.Now()
	notAfter := now.Add(leafValidity)
	if notAfter.After(c.cert.NotAfter) {
		notAfter = c.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"replay"}, CommonName: name},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{name}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		return nil, fmt.Errorf("leaf certificate for %s: %w", name, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("leaf certificate for %s: %w", name, err)
	}
	return &tls.Certificate{
		Certificate: [][]byte{der, c.cert.Raw},
		PrivateKey:  key,
		Leaf:        leaf,
	}, nil
}
