package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/internal/testnet"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestRunTLS(t *testing.T) {
	cert := testnet.NewCert(t, "127.0.0.1")
	dir := t.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.TLS.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, cert.PEM, 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)

	addr := freeAddr(t)
	env := map[string]string{"ADDR": addr, "TLS_CERT": certFile, "TLS_KEY": keyFile}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }) }()

	client := cert.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get("https://" + addr + "/products/SKU-1001")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("GET /products/SKU-1001 = %d, want 200", resp.StatusCode)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("catalog not up: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return after cancel")
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{"TLS_CERT": "a.pem"}, "set both TLS_CERT and TLS_KEY"},
		{map[string]string{"TLS_CERT": "/nonexistent/a.pem", "TLS_KEY": "/nonexistent/b.pem"}, "load TLS_CERT/TLS_KEY"},
		{map[string]string{"ADDR": "256.1.1.1:1"}, "listen"},
	}
	for _, tt := range tests {
		err := run(context.Background(), func(k string) string { return tt.env[k] })
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("run(%v) = %v, want an error containing %q", tt.env, err, tt.wantErr)
		}
	}
}
