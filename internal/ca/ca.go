package ca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// File names inside a CA directory.
const (
	CertFile   = "ca.pem"
	KeyFile    = "ca-key.pem"
	BundleFile = "bundle.pem"
)

// Validity of a new CA: ten years.
const caValidity = 10 * 365 * 24 * time.Hour

// keyWait is how long LoadOrCreate waits for the key of a certificate that
// another process is creating at the same moment.
const keyWait = 2 * time.Second

// CA is replay's certificate authority. Safe for concurrent use.
type CA struct {
	dir     string
	cert    *x509.Certificate
	certPEM []byte
	key     *ecdsa.PrivateKey
	pool    *x509.CertPool

	mu        sync.Mutex
	leaves    map[string]*leafCall
	signed    atomic.Int64 // leaves signed, for tests
	maxLeaves int          // cache bound

	bundleMu   sync.Mutex
	bundlePath string
}

// DefaultDir returns the default CA directory: $XDG_CONFIG_HOME/replay/ca
// when XDG_CONFIG_HOME is set to an absolute path, else ~/.config/replay/ca.
func DefaultDir() (string, error) {
	if cfg := os.Getenv("XDG_CONFIG_HOME"); cfg != "" && filepath.IsAbs(cfg) {
		return filepath.Join(cfg, "replay", "ca"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("default CA directory: %w", err)
	}
	return filepath.Join(home, ".config", "replay", "ca"), nil
}

// LoadOrCreate loads the CA kept in dir (dir/ca.pem and dir/ca-key.pem),
// creating dir and a new CA (ECDSA P-256, valid ten years) when there is
// none. An empty dir means DefaultDir; a relative one is made absolute. A
// key file readable by anyone but its owner is refused, as are a
// certificate without its key, a key that does not match the certificate,
// and an expired CA. Several processes may call it on the same directory at
// once: they all end up with the same CA.
func LoadOrCreate(dir string) (*CA, error) {
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // paths handed to apps must not depend on our working directory
	}
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	// The key first: create places the certificate before the key, so a
	// key seen here means its certificate is there too, even while another
	// process is creating the CA (looking at the certificate first could see
	// neither file, then both, and call that a key without its certificate).
	_, keyErr := os.Stat(keyPath)
	_, certErr := os.Stat(certPath)
	switch {
	case certErr == nil && keyErr == nil:
		return load(dir)
	case certErr == nil && errors.Is(keyErr, fs.ErrNotExist):
		// Another process may be creating the CA right now: wait for its key.
		if waitFor(keyPath, keyWait) {
			return load(dir)
		}
		return nil, fmt.Errorf("load CA: %s exists without its key %s (remove %s to create a new CA)", certPath, keyPath, certPath)
	case errors.Is(certErr, fs.ErrNotExist) && keyErr == nil:
		return nil, fmt.Errorf("load CA: %s exists without its certificate %s (remove %s to create a new CA)", keyPath, certPath, keyPath)
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		return create(dir)
	case certErr != nil:
		return nil, fmt.Errorf("load CA: %w", certErr)
	default:
		return nil, fmt.Errorf("load CA: %w", keyErr)
	}
}

// waitFor reports whether path appears within d.
func waitFor(path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// create makes a new CA in dir. The certificate and the key are written to
// temporary files and then linked into place, certificate first, so that a
// concurrent LoadOrCreate never reads a half-written file; when another
// process wins the race, its CA is loaded instead.
func create(dir string) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create CA directory: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("create CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	host, _ := os.Hostname()
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			Organization:       []string{"replay"},
			OrganizationalUnit: []string{host},
			CommonName:         "replay CA " + hex.EncodeToString(serial.Bytes()[:4]),
		},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("create CA key: %w", err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})

	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	won, err := placeFile(certPath, certPEM, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	if !won {
		if !waitFor(keyPath, keyWait) {
			return nil, fmt.Errorf("create CA: %s appeared without its key %s", certPath, keyPath)
		}
		return load(dir)
	}
	if _, err := placeFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	return load(dir)
}

// placeFile writes data to path only if path does not exist yet, never
// exposing a partly written file; won reports whether this call created it.
func placeFile(path string, data []byte, perm os.FileMode) (won bool, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return false, err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return false, err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, err
	}
	if err := tmp.Close(); err != nil {
		return false, err
	}
	err = os.Link(tmpName, path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	// No hard links on this file system: fall back to an exclusive create.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return true, err
	}
	return true, f.Close()
}

// load reads and checks the CA in dir.
func load(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	fi, err := os.Stat(keyPath)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("load CA: key %s has permissions %#o, others can read it; run chmod 600 %s", keyPath, perm, keyPath)
	}
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("load CA: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("load CA from %s: %w", dir, err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("load CA: key %s is not an ECDSA key", keyPath)
	}
	cert := pair.Leaf
	if cert == nil {
		if cert, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("load CA %s: %w", certPath, err)
		}
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("load CA: %s is not a CA certificate", certPath)
	}
	if time.Now().After(cert.NotAfter) {
		return nil, fmt.Errorf("load CA: %s expired on %s (remove %s and %s to create a new CA)",
			certPath, cert.NotAfter.Format(time.DateOnly), certPath, keyPath)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &CA{
		dir:       dir,
		cert:      cert,
		certPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}),
		key:       key,
		pool:      pool,
		leaves:    map[string]*leafCall{},
		maxLeaves: maxLeaves,
	}, nil
}

func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 127)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

// Dir returns the directory the CA is kept in.
func (c *CA) Dir() string { return c.dir }

// CertPath returns the path of the CA certificate (PEM): dir/ca.pem.
func (c *CA) CertPath() string { return filepath.Join(c.dir, CertFile) }

// KeyPath returns the path of the CA private key (PEM): dir/ca-key.pem.
func (c *CA) KeyPath() string { return filepath.Join(c.dir, KeyFile) }

// Certificate returns the CA certificate.
func (c *CA) Certificate() *x509.Certificate { return c.cert }

// CertPEM returns the CA certificate, PEM-encoded.
func (c *CA) CertPEM() []byte { return append([]byte(nil), c.certPEM...) }

// Fingerprint returns the SHA-256 fingerprint of the CA certificate in
// upper-case hex, colon-separated (as browsers and keytool print it).
func (c *CA) Fingerprint() string {
	sum := sha256.Sum256(c.cert.Raw)
	out := make([]byte, 0, len(sum)*3)
	for i, b := range sum {
		if i > 0 {
			out = append(out, ':')
		}
		out = append(out, "0123456789ABCDEF"[b>>4], "0123456789ABCDEF"[b&15])
	}
	return string(out)
}

// Pool returns a certificate pool holding just this CA; each call returns a
// copy the caller may change.
func (c *CA) Pool() *x509.CertPool { return c.pool.Clone() }
