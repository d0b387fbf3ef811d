package ca

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func newCA(t *testing.T) *CA {
	t.Helper()
	c, err := LoadOrCreate(filepath.Join(t.TempDir(), "ca"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadOrCreateNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "ca")
	c, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.CertPath(), filepath.Join(dir, "ca.pem"); got != want {
		t.Errorf("CertPath() = %q, want %q", got, want)
	}
	fi, err := os.Stat(filepath.Join(dir, "ca-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("key permissions = %#o, want 0600", perm)
	}
	cert := c.Certificate()
	if !cert.IsCA || !cert.BasicConstraintsValid {
		t.Errorf("certificate is not a CA: IsCA=%v", cert.IsCA)
	}
	pub, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", cert.PublicKey)
	}
	if years := cert.NotAfter.Sub(time.Now()).Hours() / 24 / 365; years < 9.9 || years > 10.1 {
		t.Errorf("CA valid for %.2f years, want 10", years)
	}
	if got := cert.Subject.CommonName; !strings.HasPrefix(got, "replay CA") {
		t.Errorf("CommonName = %q", got)
	}
	// Never goproxy's built-in CA.
	if bytes.Contains(c.CertPEM(), []byte("goproxy")) || cert.Subject.CommonName == "goproxy.github.io" {
		t.Error("the library's built-in CA was used")
	}
}

func TestLoadOrCreateReloadsSameCA(t *testing.T) {
	dir := t.TempDir()
	a, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Certificate().Equal(b.Certificate()) {
		t.Error("second LoadOrCreate made a new CA")
	}
	if a.Fingerprint() != b.Fingerprint() {
		t.Errorf("fingerprints differ: %s, %s", a.Fingerprint(), b.Fingerprint())
	}
	// A leaf signed by one instance verifies against the other's pool.
	leaf, err := a.Leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: b.Pool()}); err != nil {
		t.Errorf("leaf from first instance does not verify with second: %v", err)
	}
}

// TestLoadOrCreateConcurrent: callers racing on a directory without a CA
// all end up with the same one, and nothing else is left behind; over many
// rounds, so that a caller looking at the directory while another places
// the files is caught.
func TestLoadOrCreateConcurrent(t *testing.T) {
	for round := range 30 {
		dir := filepath.Join(t.TempDir(), "ca")
		const n = 8
		cas := make([]*CA, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { cas[i], errs[i] = LoadOrCreate(dir) })
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: LoadOrCreate %d: %v", round, i, errs[i])
			}
			if cas[i].Fingerprint() != cas[0].Fingerprint() {
				t.Errorf("round %d: instance %d has another CA", round, i)
			}
		}
		entries, _ := os.ReadDir(dir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(names) != 2 {
			t.Errorf("round %d: directory holds %v, want just ca.pem and ca-key.pem", round, names)
		}
	}
}

func TestLoadOrCreateRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"loose key permissions", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, KeyFile), 0o644); err != nil {
				t.Fatal(err)
			}
		}, "chmod 600"},
		{"group-readable key", func(t *testing.T, dir string) {
			if err := os.Chmod(filepath.Join(dir, KeyFile), 0o640); err != nil {
				t.Fatal(err)
			}
		}, "permissions 0640"},
		{"key without certificate", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, CertFile))
		}, "exists without its certificate"},
		{"certificate without key", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, KeyFile))
		}, "exists without its key"},
		{"corrupt certificate", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, CertFile), []byte("not a certificate"), 0o644)
		}, "load CA from " + "DIR"},
		{"expired CA", func(t *testing.T, dir string) {
			keyPEM, _ := os.ReadFile(filepath.Join(dir, KeyFile))
			b, _ := pem.Decode(keyPEM)
			key, err := x509.ParseECPrivateKey(b.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			tmpl := &x509.Certificate{
				SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "old replay CA"},
				NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour),
				IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
			}
			der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, CertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
		}, "expired on"},
		{"key of another CA", func(t *testing.T, dir string) {
			other := t.TempDir()
			if _, err := LoadOrCreate(other); err != nil {
				t.Fatal(err)
			}
			key, _ := os.ReadFile(filepath.Join(other, KeyFile))
			os.WriteFile(filepath.Join(dir, KeyFile), key, 0o600)
		}, "private key does not match public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := LoadOrCreate(dir); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			_, err := LoadOrCreate(dir)
			if err == nil {
				t.Fatal("LoadOrCreate succeeded, want an error")
			}
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not mention %q", err, want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/xdg")
	if got, _ := DefaultDir(); got != "/xdg/replay/ca" {
		t.Errorf("with XDG_CONFIG_HOME: %q", got)
	}
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/u")
	if got, _ := DefaultDir(); got != "/home/u/.config/replay/ca" {
		t.Errorf("without XDG_CONFIG_HOME: %q", got)
	}
}

func TestLeafVerifies(t *testing.T) {
	c := newCA(t)
	tests := []struct {
		host, verifyAs string
	}{
		{"api.test", "api.test"},
		{"API.Test:443", "api.test"},
		{"catalog.test.", "catalog.test"},
		{"127.0.0.1", "127.0.0.1"},
		{"[::1]:8443", "::1"},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			leaf, err := c.Leaf(tt.host)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := leaf.PrivateKey.(*ecdsa.PrivateKey); !ok {
				t.Errorf("leaf key is %T, want ECDSA", leaf.PrivateKey)
			}
			opts := x509.VerifyOptions{DNSName: tt.verifyAs, Roots: c.Pool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
			if _, err := leaf.Leaf.Verify(opts); err != nil {
				t.Errorf("leaf does not verify against Pool: %v", err)
			}
			opts.DNSName = "other.test"
			if _, err := leaf.Leaf.Verify(opts); err == nil {
				t.Error("leaf verifies for another host name")
			}
			if len(leaf.Certificate) != 2 || !bytes.Equal(leaf.Certificate[1], c.Certificate().Raw) {
				t.Error("leaf chain does not carry the CA certificate")
			}
		})
	}
	// Another CA's pool must not accept it.
	leaf, _ := c.Leaf("api.test")
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: newCA(t).Pool()}); err == nil {
		t.Error("leaf verifies against an unrelated CA")
	}
}

func TestLeafBadHost(t *testing.T) {
	c := newCA(t)
	for _, h := range []string{"", ":443", "bad host", "a/b"} {
		if _, err := c.Leaf(h); err == nil {
			t.Errorf("Leaf(%q) succeeded", h)
		}
	}
}

func TestLeafCache(t *testing.T) {
	c := newCA(t)
	const n = 50
	got := make([]*tls.Certificate, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			host := "api.test"
			if i%2 == 1 {
				host = "API.test:443"
			}
			var err error
			if got[i], err = c.Leaf(host); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if got[i] != got[0] {
			t.Fatalf("caller %d got another leaf", i)
		}
	}
	if s := c.signed.Load(); s != 1 {
		t.Errorf("%d signings for one host, want 1", s)
	}
	other, err := c.Leaf("other.test")
	if err != nil {
		t.Fatal(err)
	}
	if other == got[0] {
		t.Error("another host got the same leaf")
	}
	if s := c.signed.Load(); s != 2 {
		t.Errorf("%d signings for two hosts, want 2", s)
	}
}

func TestBundlePath(t *testing.T) {
	c := newCA(t)
	path, err := c.BundlePath()
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(c.Dir(), "bundle.pem") {
		t.Errorf("BundlePath() = %q", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	certs := parseCerts(t, data)
	if len(certs) == 0 || !certs[len(certs)-1].Equal(c.Certificate()) {
		t.Fatal("bundle does not end with the replay CA")
	}
	if system := systemRoots(""); len(system) > 0 {
		if want := len(parseCerts(t, system)) + 1; len(certs) != want {
			t.Errorf("bundle holds %d certificates, want the %d system roots plus the CA", len(certs), want-1)
		}
	}
	// A second writer of the same directory does not pile up copies.
	c2, err := LoadOrCreate(c.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.BundlePath(); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if !bytes.Equal(again, data) {
		t.Errorf("rewritten bundle differs: %d bytes, was %d", len(again), len(data))
	}
}

func TestSystemRootsHaveCerts(t *testing.T) {
	// The machines replay is built on are Debian: the bundle must not come
	// out as just our CA there.
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err != nil {
		t.Skip("no Debian CA bundle on this machine")
	}
	if n := len(parseCerts(t, systemRoots(""))); n < 10 {
		t.Errorf("found %d system roots, want the Debian bundle", n)
	}
}

func parseCerts(t *testing.T, data []byte) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return out
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			continue // some system bundles carry certificates Go cannot parse
		}
		out = append(out, c)
	}
}

// TestTLSConfigHandshake serves TLS with the CA's leaves and connects with a
// client that trusts only Pool, by name (SNI) and by IP (no SNI).
func TestTLSConfigHandshake(t *testing.T) {
	c := newCA(t)
	l, err := tls.Listen("tcp", "127.0.0.1:0", c.TLSConfig("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				conn.(*tls.Conn).Handshake()
				conn.Write([]byte("ok"))
			}()
		}
	}()
	for _, name := range []string{"api.test", ""} {
		cfg := &tls.Config{RootCAs: c.Pool(), ServerName: name}
		if name == "" {
			cfg.ServerName = "127.0.0.1"
		}
		conn, err := tls.Dial("tcp", l.Addr().String(), cfg)
		if err != nil {
			t.Fatalf("handshake as %q: %v", cfg.ServerName, err)
		}
		got := conn.ConnectionState().PeerCertificates[0]
		conn.Close()
		if name == "" && (len(got.IPAddresses) != 1 || !got.IPAddresses[0].Equal(net.ParseIP("127.0.0.1"))) {
			t.Errorf("no-SNI leaf has IPs %v", got.IPAddresses)
		}
		if name != "" && (len(got.DNSNames) != 1 || got.DNSNames[0] != name) {
			t.Errorf("leaf for %q has names %v", name, got.DNSNames)
		}
	}
}

func TestMITMAction(t *testing.T) {
	c := newCA(t)
	a := c.MITM()
	if a.TLSConfig == nil {
		t.Fatal("MITM action has no TLSConfig")
	}
	cfg, err := a.TLSConfig("api.test:443", nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := cfg.GetCertificate(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: c.Pool()}); err != nil {
		t.Errorf("leaf for the CONNECT host does not verify: %v", err)
	}
	if _, err := a.TLSConfig("bad host:443", nil); err == nil {
		t.Error("MITM accepted a bad CONNECT host")
	}
}

func TestLoadOrCreateRelativeDir(t *testing.T) {
	t.Chdir(t.TempDir())
	c, err := LoadOrCreate("rel/ca")
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(c.CertPath()) || !filepath.IsAbs(c.Dir()) {
		t.Errorf("CertPath %q, Dir %q: want absolute paths", c.CertPath(), c.Dir())
	}
}

func TestLeafCacheBounded(t *testing.T) {
	c := newCA(t)
	c.maxLeaves = 16
	for i := range c.maxLeaves + 10 {
		if _, err := c.Leaf(fmt.Sprintf("h%d.test", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	n := len(c.leaves)
	c.mu.Unlock()
	if n > c.maxLeaves {
		t.Errorf("cache holds %d leaves, want at most %d", n, c.maxLeaves)
	}
	// An evicted host gets a fresh, valid leaf.
	leaf, err := c.Leaf("h0.test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "h0.test", Roots: c.Pool()}); err != nil {
		t.Error(err)
	}
}

func TestRootsWith(t *testing.T) {
	dir := t.TempDir()
	c, err := LoadOrCreate(filepath.Join(dir, "ca"))
	if err != nil {
		t.Fatal(err)
	}
	roots, err := RootsWith(c.CertPath())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := c.Leaf("db.internal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "db.internal"}); err != nil {
		t.Errorf("a leaf of the CA does not verify with RootsWith(its certificate): %v", err)
	}
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o644)
	if _, err := RootsWith(bad); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("RootsWith(a file without certificates) = %v; want an error saying so", err)
	}
	if _, err := RootsWith(filepath.Join(dir, "none.pem")); err == nil {
		t.Error("RootsWith(a missing file) gave no error")
	}
}
