package pgcluster

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// setUpTLS writes the server's certificate and key into the data directory
// (owned by the server's user, the key private to it, as postgres demands)
// and, with RequireTLS, a pg_hba.conf that admits TCP clients over TLS only.
func setUpTLS(data string, cred *syscall.Credential, cfg Config) error {
	var certPEM []byte
	for _, der := range cfg.TLS.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cfg.TLS.PrivateKey)
	if err != nil {
		return fmt.Errorf("server key: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{{"server.crt", certPEM}, {"server.key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})}}
	if cfg.RequireTLS {
		files = append(files, struct {
			name string
			data []byte
		}{"pg_hba.conf", []byte("local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n")})
	}
	for _, f := range files {
		path := filepath.Join(data, f.name)
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}
