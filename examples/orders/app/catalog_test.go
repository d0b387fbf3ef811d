package app_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/examples/internal/testnet"
	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/internal/pgtest"
)

// catalogHost is a name the test certificate covers besides 127.0.0.1; it
// does not resolve, so only a proxy can reach it.
const catalogHost = "catalog.orders.test"

// upstream is the catalog stand-in over real TLS, with what it saw.
type upstream struct {
	url    string // https://127.0.0.1:port
	addr   string
	cert   *testnet.Cert
	client *http.Client // trusts cert only

	mu       sync.Mutex
	requests []seen
}

type seen struct {
	acceptEncoding, traceparent, tracestate, contentEncoding string
}

func (u *upstream) seen() []seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]seen(nil), u.requests...)
}

// recordingWriter notes the Content-Encoding the handler answers with.
type recordingWriter struct {
	http.ResponseWriter
	encoding *string
}

func (w recordingWriter) WriteHeader(code int) {
	*w.encoding = w.Header().Get("Content-Encoding")
	w.ResponseWriter.WriteHeader(code)
}

func startCatalog(t *testing.T) *upstream {
	t.Helper()
	u := &upstream{cert: testnet.NewCert(t, "127.0.0.1", catalogHost)}
	h := catalog.Handler()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{acceptEncoding: r.Header.Get("Accept-Encoding"), traceparent: r.Header.Get("traceparent"), tracestate: r.Header.Get("tracestate")}
		h.ServeHTTP(recordingWriter{w, &s.contentEncoding}, r)
		u.mu.Lock()
		u.requests = append(u.requests, s)
		u.mu.Unlock()
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{u.cert.TLS}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u.url, u.addr, u.client = srv.URL, srv.Listener.Addr().String(), u.cert.Client()
	return u
}

func TestCatalogOverTLS(t *testing.T) {
	up := startCatalog(t)
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t), CatalogURL: up.url, HTTPClient: up.client})

	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := call(t, "GET", base+"/catalog", nil, "traceparent", tp, "tracestate", "vendor=1")
	if r.status != http.StatusOK {
		t.Fatalf("GET /catalog = %d %s, want 200", r.status, r.body)
	}
	var got struct {
		Count    int               `json:"count"`
		Products []catalog.Product `json:"products"`
	}
	r.decode(t, &got)
	if d := cmp.Diff(catalog.Products(), got.Products); d != "" || got.Count != len(catalog.Products()) {
		t.Errorf("GET /catalog: count %d, products (-want +got):\n%s", got.Count, d)
	}
	want := []seen{{acceptEncoding: "gzip", traceparent: tp, tracestate: "vendor=1", contentEncoding: "gzip"}}
	if d := cmp.Diff(want, up.seen(), cmp.AllowUnexported(seen{})); d != "" {
		t.Errorf("the catalog saw (-want +got):\n%s", d)
	}

	// Without a traceparent, none is invented.
	call(t, "GET", base+"/catalog", nil)
	if s := up.seen(); len(s) != 2 || s[1].traceparent != "" {
		t.Errorf("second catalog call: %+v, want no traceparent", s)
	}
}

// TestCatalogUpstreamN1: with UpstreamN1, GET /catalog answers the same and
// calls the catalog once per product more, each call with the request's
// traceparent.
func TestCatalogUpstreamN1(t *testing.T) {
	up := startCatalog(t)
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t), CatalogURL: up.url, HTTPClient: up.client, UpstreamN1: true})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	r := call(t, "GET", base+"/catalog", nil, "traceparent", tp)
	var got app.Catalog
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Count != 10 {
		t.Fatalf("GET /catalog = %d %s, want 200 with 10 products", r.status, r.body)
	}
	seen := up.seen()
	if len(seen) != 11 {
		t.Fatalf("the catalog saw %d calls, want 11 (the list, then each of 10 products)", len(seen))
	}
	for i, s := range seen {
		if s.traceparent != tp {
			t.Errorf("call %d: traceparent %q", i, s.traceparent)
		}
	}
}

// TestCatalogStart runs the stand-in with catalog.Start, as the demo does.
func TestCatalogStart(t *testing.T) {
	cert := testnet.NewCert(t, "127.0.0.1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := catalog.Start(ctx, cert.TLS, "")
	if err != nil {
		t.Fatal(err)
	}
	_, base := startApp(t, app.Config{DatabaseURL: pgtest.Database(t), CatalogURL: srv.URL(), HTTPClient: cert.Client()})
	r := call(t, "GET", base+"/catalog", nil)
	var got app.Catalog
	r.decode(t, &got)
	if r.status != http.StatusOK || got.Count != 10 || len(got.Products) != 10 {
		t.Fatalf("GET /catalog = %d %s, want 200 with 10 products", r.status, r.body)
	}
	var first catalog.Product
	if err := json.Unmarshal(got.Products[0], &first); err != nil || first != catalog.Products()[0] {
		t.Errorf("first product = %+v (%v), want %+v", first, err, catalog.Products()[0])
	}

	// Once the stand-in is gone, the service answers 502.
	cancel()
	<-srv.Done()
	r = call(t, "GET", base+"/catalog", nil)
	if r.status != http.StatusBadGateway {
		t.Fatalf("GET /catalog with the catalog down = %d %s, want 502", r.status, r.body)
	}
	r.errorMessage(t)
}

func TestCatalogFailures(t *testing.T) {
	db := pgtest.Database(t)
	up := startCatalog(t)
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/500/products":
			http.Error(w, "boom", http.StatusInternalServerError)
		case "/html/products":
			w.Write([]byte("<html>"))
		default:
			w.Write([]byte(`{"items":[]}`))
		}
	}))
	t.Cleanup(broken.Close)

	tests := []struct {
		name    string
		cfg     app.Config
		wantErr string
	}{
		{"no catalog URL", app.Config{}, "no catalog API configured"},
		{"upstream 500", app.Config{CatalogURL: broken.URL + "/500"}, "500 Internal Server Error"},
		{"not JSON", app.Config{CatalogURL: broken.URL + "/html"}, "invalid JSON"},
		{"no products", app.Config{CatalogURL: broken.URL + "/other"}, `no "products"`},
		// The default client does not trust the test certificate.
		{"untrusted certificate", app.Config{CatalogURL: up.url}, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.DatabaseURL = db
			_, base := startApp(t, cfg)
			r := call(t, "GET", base+"/catalog", nil)
			if r.status != http.StatusBadGateway {
				t.Fatalf("GET /catalog = %d %s, want 502", r.status, r.body)
			}
			if msg := r.errorMessage(t); !strings.Contains(msg, tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", msg, tt.wantErr)
			}
		})
	}
}
