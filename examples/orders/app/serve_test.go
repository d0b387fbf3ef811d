package app_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/internal/testnet"
	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/syncbuf"
)

func TestParseEnv(t *testing.T) {
	db := "postgres://u@127.0.0.1:5432/orders"
	tests := []struct {
		name    string
		env     map[string]string
		want    app.Settings
		wantErr string
	}{
		{"defaults", map[string]string{"DATABASE_URL": db},
			app.Settings{Addr: "127.0.0.1:8080", DatabaseURL: db}, ""},
		{"all set", map[string]string{"DATABASE_URL": db, "PORT": "9001", "HOST": "0.0.0.0", "APP_SLOW": "1", "CATALOG_URL": "https://catalog.example.com", "APP_SQLCOMMENT": "true"},
			app.Settings{Addr: "0.0.0.0:9001", DatabaseURL: db, Slow: true, CatalogURL: "https://catalog.example.com", SQLComment: true}, ""},
		{"APP_SLOW=0", map[string]string{"DATABASE_URL": db, "APP_SLOW": "0"},
			app.Settings{Addr: "127.0.0.1:8080", DatabaseURL: db}, ""},
		{"IPv6 host", map[string]string{"DATABASE_URL": db, "HOST": "::1", "PORT": "0"},
			app.Settings{Addr: "[::1]:0", DatabaseURL: db}, ""},
		{"no DATABASE_URL", map[string]string{"PORT": "1"}, app.Settings{}, "DATABASE_URL is not set"},
		{"bad PORT", map[string]string{"DATABASE_URL": db, "PORT": "http"}, app.Settings{}, `PORT must be a port number, got "http"`},
		{"PORT too big", map[string]string{"DATABASE_URL": db, "PORT": "70000"}, app.Settings{}, "PORT must be a port number"},
		{"bad APP_SLOW", map[string]string{"DATABASE_URL": db, "APP_SLOW": "yes please"}, app.Settings{}, `APP_SLOW must be 0 or 1, got "yes please"`},
		{"APP_DELAY", map[string]string{"DATABASE_URL": db, "APP_DELAY": "GET /orders/{id}/status=50ms, POST  /orders=1s"},
			app.Settings{Addr: "127.0.0.1:8080", DatabaseURL: db, Delay: map[string]time.Duration{"GET /orders/{id}/status": 50 * time.Millisecond, "POST /orders": time.Second}}, ""},
		{"bad APP_DELAY route", map[string]string{"DATABASE_URL": db, "APP_DELAY": "GET /order=5ms"}, app.Settings{}, `APP_DELAY "GET /order=5ms": unknown route "GET /order"`},
		{"bad APP_DELAY duration", map[string]string{"DATABASE_URL": db, "APP_DELAY": "GET /orders=fast"}, app.Settings{}, `APP_DELAY "GET /orders=fast": want a duration`},
		{"APP_DELAY without =", map[string]string{"DATABASE_URL": db, "APP_DELAY": "GET /orders"}, app.Settings{}, `APP_DELAY "GET /orders": want ROUTE=DURATION`},
		{"APP_BURN", map[string]string{"DATABASE_URL": db, "APP_BURN": "GET /orders/{id}=40us"},
			app.Settings{Addr: "127.0.0.1:8080", DatabaseURL: db, Burn: map[string]time.Duration{"GET /orders/{id}": 40 * time.Microsecond}}, ""},
		{"bad APP_BURN route", map[string]string{"DATABASE_URL": db, "APP_BURN": "GET /order=5ms"}, app.Settings{}, `APP_BURN "GET /order=5ms": unknown route "GET /order"`},
		{"bad APP_BURN duration", map[string]string{"DATABASE_URL": db, "APP_BURN": "GET /orders=-1us"}, app.Settings{}, `APP_BURN "GET /orders=-1us": want a duration`},
		{"APP_BURN without =", map[string]string{"DATABASE_URL": db, "APP_BURN": "GET /orders"}, app.Settings{}, `APP_BURN "GET /orders": want ROUTE=DURATION`},
		{"bad CATALOG_URL", map[string]string{"DATABASE_URL": db, "CATALOG_URL": "catalog:443"}, app.Settings{}, "CATALOG_URL must be an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := app.ParseEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseEnv = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// waitUp polls url until it answers or the deadline passes.
func waitUp(t *testing.T, url string, failed <-chan error) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-failed:
			t.Fatalf("service stopped before it was up: %v", err)
		default:
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not come up within 60s", url)
}

// TestServe runs the service from an environment, as `replay demo` does,
// with the catalog reached by hostname through an HTTPS proxy and trusted
// through SSL_CERT_FILE, then stops it by cancelling the context.
func TestServe(t *testing.T) {
	up := startCatalog(t)
	proxy := testnet.NewProxy(t, up.addr)
	port := freePort(t)
	env := map[string]string{
		"DATABASE_URL":  pgtest.Database(t),
		"PORT":          port,
		"APP_SLOW":      "1",
		"CATALOG_URL":   "https://" + catalogHost,
		"HTTPS_PROXY":   proxy.URL,
		"SSL_CERT_FILE": up.cert.WritePEM(t),
	}
	var logs syncbuf.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- app.Serve(ctx, func(k string) string { return env[k] }, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	base := "http://127.0.0.1:" + port
	waitUp(t, base+"/orders", done)

	if _, err := app.Seed(ctx, base, nil, 3); err != nil {
		t.Fatal(err)
	}
	r := call(t, "GET", base+"/orders", nil)
	var list app.OrderList
	r.decode(t, &list)
	if r.status != http.StatusOK || len(list.Orders) != 3 {
		t.Errorf("GET /orders = %d with %d orders, want 200 with 3", r.status, len(list.Orders))
	}
	r = call(t, "GET", base+"/catalog", nil)
	if r.status != http.StatusOK {
		t.Errorf("GET /catalog through the proxy = %d %s, want 200", r.status, r.body)
	}
	if h := proxy.Hosts(); len(h) != 1 || h[0] != catalogHost+":443" {
		t.Errorf("proxy was asked for %q, want [%s:443]", h, catalogHost)
	}
	if n := strings.Count(logs.String(), "orders listening"); n != 1 || !strings.Contains(logs.String(), "url=http://127.0.0.1:"+port) {
		t.Errorf("log = %q, want one \"orders listening\" line with the URL", logs.String())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after cancel = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return within 30s of cancel")
	}
	if _, err := http.Get(base + "/orders"); err == nil {
		t.Errorf("service still answers after Serve returned")
	}
}

func TestServeErrors(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"no database", map[string]string{}, "DATABASE_URL is not set"},
		{"unreachable database", map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/x"}, "connect to database"},
		{"bad SSL_CERT_FILE", map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/x", "SSL_CERT_FILE": "/nonexistent/ca.pem"}, "SSL_CERT_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := app.Serve(context.Background(), func(k string) string { return tt.env[k] }, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Serve = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}

	// A port in use.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	env := map[string]string{"DATABASE_URL": pgtest.Database(t), "PORT": strconv.Itoa(l.Addr().(*net.TCPAddr).Port)}
	err = app.Serve(context.Background(), func(k string) string { return env[k] }, nil)
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("Serve on a busy port = %v, want a listen error", err)
	}
}
