package catalog_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/examples/internal/testnet"
	"github.com/replaykit/replay/examples/orders/catalog"
)

// get sends a request to h and returns the recorded response.
func get(h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestProducts(t *testing.T) {
	h := catalog.Handler()
	plain := get(h, "/products")
	if plain.Code != 200 || plain.Header().Get("Content-Type") != "application/json" || plain.Header().Get("Content-Encoding") != "" {
		t.Fatalf("GET /products = %d %v", plain.Code, plain.Header())
	}
	var list catalog.List
	if err := json.Unmarshal(plain.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(catalog.Products(), list.Products); d != "" || len(list.Products) != 10 {
		t.Errorf("products (-want +got):\n%s", d)
	}
	skus := map[string]bool{}
	for _, p := range list.Products {
		if skus[p.SKU] || p.PriceCents <= 0 || p.Name == "" {
			t.Errorf("bad or duplicate product %+v", p)
		}
		skus[p.SKU] = true
	}

	tests := []struct {
		acceptEncoding string
		wantGzip       bool
	}{
		{"gzip", true},
		{"br, gzip;q=0.8", true},
		{"GZIP", true},
		{"gzip;q=0", false},
		{"identity", false},
		{"deflate, br", false},
	}
	for _, tt := range tests {
		t.Run(tt.acceptEncoding, func(t *testing.T) {
			w := get(h, "/products", "Accept-Encoding", tt.acceptEncoding)
			if gotGzip := w.Header().Get("Content-Encoding") == "gzip"; gotGzip != tt.wantGzip {
				t.Fatalf("Content-Encoding = %q, want gzip: %v", w.Header().Get("Content-Encoding"), tt.wantGzip)
			}
			if w.Header().Get("Vary") != "Accept-Encoding" {
				t.Errorf("Vary = %q, want Accept-Encoding", w.Header().Get("Vary"))
			}
			body := w.Body.Bytes()
			if tt.wantGzip {
				zr, err := gzip.NewReader(bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, plain.Body.Bytes()) {
				t.Errorf("decoded body differs from the plain one")
			}
		})
	}

	// Byte-for-byte deterministic, also across handlers.
	a := get(h, "/products", "Accept-Encoding", "gzip").Body.Bytes()
	b := get(catalog.Handler(), "/products", "Accept-Encoding", "gzip").Body.Bytes()
	if !bytes.Equal(a, b) || len(a) == 0 || len(a) >= plain.Body.Len() {
		t.Errorf("gzip bodies: %d and %d bytes, equal %v; plain %d bytes", len(a), len(b), bytes.Equal(a, b), plain.Body.Len())
	}
}

func TestProduct(t *testing.T) {
	h := catalog.Handler()
	w := get(h, "/products/SKU-1005")
	var p catalog.Product
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != 200 || p != catalog.Products()[4] {
		t.Errorf("GET /products/SKU-1005 = %d %s (%v), want %+v", w.Code, w.Body, err, catalog.Products()[4])
	}
	w = get(h, "/products/NOPE")
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"error":"product \"NOPE\" not found"`) {
		t.Errorf("GET /products/NOPE = %d %s, want 404 with a JSON error", w.Code, w.Body)
	}
	if w := get(h, "/other"); w.Code != 404 {
		t.Errorf("GET /other = %d, want 404", w.Code)
	}
}

func TestStart(t *testing.T) {
	cert := testnet.NewCert(t, "127.0.0.1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := catalog.Start(ctx, cert.TLS, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.Addr(), "127.0.0.1:") || srv.URL() != "https://"+srv.Addr() {
		t.Errorf("Addr %q URL %q, want 127.0.0.1:port and https://127.0.0.1:port", srv.Addr(), srv.URL())
	}
	client := cert.Client()
	// Go's transport asks for gzip and decodes it transparently.
	resp, err := client.Get(srv.URL() + "/products")
	if err != nil {
		t.Fatal(err)
	}
	var list catalog.List
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || !resp.Uncompressed || len(list.Products) != 10 {
		t.Errorf("GET /products over TLS = %d, uncompressed by the client %v, %d products, %v", resp.StatusCode, resp.Uncompressed, len(list.Products), err)
	}
	// A client that does not trust the certificate is refused.
	if _, err := (&http.Client{Timeout: 10 * time.Second}).Get(srv.URL() + "/products"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusting client: err = %v, want a certificate error", err)
	}

	cancel()
	select {
	case <-srv.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("server still running 30s after cancel")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close after cancel = %v", err)
	}
	if _, err := client.Get(srv.URL() + "/products"); err == nil {
		t.Error("server still answers after it stopped")
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := catalog.Start(context.Background(), testnet.NewCert(t).TLS, "127.0.0.1:-1"); err == nil || !strings.Contains(err.Error(), "start catalog") {
		t.Errorf("Start on a bad address = %v, want a start catalog error", err)
	}
	if _, err := catalog.Start(context.Background(), (testnet.NewCert(t).TLS), "256.0.0.1:0"); err == nil {
		t.Errorf("Start on an impossible address succeeded")
	}
	var empty = testnet.NewCert(t).TLS
	empty.Certificate = nil
	if _, err := catalog.Start(context.Background(), empty, ""); err == nil || !strings.Contains(err.Error(), "no certificate") {
		t.Errorf("Start without a certificate = %v, want a no certificate error", err)
	}
}
