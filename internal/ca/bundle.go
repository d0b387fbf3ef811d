package ca

import (
	"bytes"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// systemRootFiles are the CA bundles of the usual systems, in the order Go's
// crypto/x509 looks for them; the first that holds certificates is used.
var systemRootFiles = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine, macOS, BSDs
}

// systemRootDirs hold one certificate per file where no bundle exists.
var systemRootDirs = []string{
	"/etc/ssl/certs",
	"/etc/pki/tls/certs",
}

// BundlePath writes dir/bundle.pem, the system's root certificates followed
// by this CA, and returns its path. Point SSL_CERT_FILE (and
// REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) at it: those replace the system roots,
// so a bundle holding only replay's CA would cut the app off from real
// hosts. When no system roots are found the bundle holds just the CA. The
// file is rewritten atomically once per CA value.
func (c *CA) BundlePath() (string, error) {
	c.bundleMu.Lock()
	defer c.bundleMu.Unlock()
	if c.bundlePath != "" {
		return c.bundlePath, nil
	}
	path := filepath.Join(c.dir, BundleFile)
	roots := systemRoots(path)
	var buf bytes.Buffer
	buf.Grow(len(roots) + len(c.certPEM) + 64)
	buf.Write(roots)
	fmt.Fprintf(&buf, "# replay CA (%s)\n", c.cert.Subject.CommonName)
	buf.Write(c.certPEM)
	if err := writeAtomic(path, buf.Bytes(), 0o644); err != nil {
		return "", fmt.Errorf("write CA bundle: %w", err)
	}
	c.bundlePath = path
	return path, nil
}

// systemRoots returns the PEM certificates of the system's trust store,
// skipping own (a previous bundle must never feed the next one).
func systemRoots(own string) []byte {
	for _, f := range systemRootFiles {
		if sameFile(f, own) {
			continue
		}
		if data, err := os.ReadFile(f); err == nil && hasCert(data) {
			if !bytes.HasSuffix(data, []byte("\n")) {
				data = append(data, '\n')
			}
			return data
		}
	}
	for _, d := range systemRootDirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		var buf bytes.Buffer
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".pem") && !strings.HasSuffix(name, ".crt") {
				continue
			}
			p := filepath.Join(d, name)
			if sameFile(p, own) {
				continue
			}
			if data, err := os.ReadFile(p); err == nil && hasCert(data) {
				buf.Write(data)
				if !bytes.HasSuffix(data, []byte("\n")) {
					buf.WriteByte('\n')
				}
			}
		}
		if buf.Len() > 0 {
			return buf.Bytes()
		}
	}
	return nil
}

func hasCert(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" {
			return true
		}
	}
}

func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(fa, fb)
}

// writeAtomic writes data to a temporary file beside path and renames it
// into place, so a reader never sees a partial file.
func writeAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
