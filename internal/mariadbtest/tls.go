package mariadbtest

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// tlsArgs writes the server's certificate and key into its directory (owned
// by the server's user, the key private to it) and returns the options
// that turn TLS on, and that refuse clients without it with RequireTLS.
func (s *Server) tlsArgs(cred *syscall.Credential, cfg Config) ([]string, error) {
	var certPEM []byte
	for _, der := range cfg.TLS.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cfg.TLS.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("server key: %w", err)
	}
	cert, keyPath := filepath.Join(s.Dir, "server.crt"), filepath.Join(s.Dir, "server.key")
	for path, data := range map[string][]byte{cert: certPEM, keyPath: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, err
		}
		if cred != nil {
			if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	args := []string{"--ssl-cert=" + cert, "--ssl-key=" + keyPath}
	if cfg.RequireTLS {
		args = append(args, "--require-secure-transport=ON")
	}
	return args, nil
}
