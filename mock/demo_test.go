package mock

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/examples/orders/catalog"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// TestDemoCatalog: the demo workload's GET /catalog calls the stand-in
// catalog API over HTTPS; recorded through the outbound recorder, it is
// served by the mock once the stand-in is stopped, with the same answer.
func TestDemoCatalog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	proxyCA := testCA(t)
	upstreamCA, err := ca.LoadOrCreate(filepath.Join(dir, "upstream-ca"))
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := upstreamCA.Leaf("catalog.test")
	if err != nil {
		t.Fatal(err)
	}
	standIn, err := catalog.Start(ctx, *leaf, "")
	if err != nil {
		t.Fatal(err)
	}
	resolve := map[string]string{"catalog.test:443": standIn.Addr()}
	dbURL := pgtest.Database(t)

	// startApp runs the orders service with its catalog calls going through
	// proxy, trusting proxyCA.
	startApp := func(proxy string) *httptest.Server {
		u, _ := url.Parse(proxy)
		tr := &http.Transport{Proxy: http.ProxyURL(u), TLSClientConfig: &tls.Config{RootCAs: proxyCA.Pool()}}
		t.Cleanup(tr.CloseIdleConnections)
		a, err := app.New(ctx, app.Config{DatabaseURL: dbURL, CatalogURL: "https://catalog.test",
			HTTPClient: &http.Client{Transport: tr, Timeout: 30 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(a.Close)
		srv := httptest.NewServer(a)
		t.Cleanup(srv.Close)
		return srv
	}
	client := &http.Client{Timeout: 60 * time.Second}

	// Record GET /catalog.
	snapPath := filepath.Join(dir, "demo.snap")
	w, err := snapshots.Create(snapPath, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := recorder.NewOutbound(recorder.OutboundConfig{Sink: w, CA: proxyCA, Resolve: resolve,
		UpstreamTLS: &tls.Config{RootCAs: upstreamCA.Pool()}})
	if err != nil {
		t.Fatal(err)
	}
	recSrv := httptest.NewServer(out)
	appURL := startApp(recSrv.URL).URL
	resp, live := do(t, client, "GET", appURL+"/catalog", nil)
	if resp.StatusCode != 200 || len(live) < 100 {
		t.Fatalf("recording: GET /catalog: %d %q", resp.StatusCode, live)
	}
	recSrv.Close()
	if err := out.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Stop the stand-in: without the mock, GET /catalog fails now.
	standIn.Close()
	direct := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: (&mockDialer{resolve}).dial, TLSClientConfig: &tls.Config{RootCAs: upstreamCA.Pool()}}}
	if resp, err := direct.Get("https://catalog.test/products"); err == nil {
		resp.Body.Close()
		t.Fatalf("the stand-in still answers: %s", resp.Status)
	}

	// Mock it.
	snap, err := snapshots.Open(snapPath)
	if err != nil {
		t.Fatal(err)
	}
	exs, err := Load(ctx, snap)
	snap.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(exs) != 1 || exs[0].Service != "catalog.test:443" || exs[0].ResponseHeader.Get("Content-Encoding") != "gzip" {
		t.Fatalf("recorded %d outbound exchanges; first %+v", len(exs), exs[0])
	}
	s := newServer(t, Config{Exchanges: exs, CA: proxyCA})
	appURL = startApp(startMock(t, s)).URL
	for range 3 {
		resp, mocked := do(t, client, "GET", appURL+"/catalog", nil)
		if resp.StatusCode != 200 || string(mocked) != string(live) {
			t.Fatalf("mocked GET /catalog: %d %q; recorded run gave %q", resp.StatusCode, mocked, live)
		}
	}
	if st := s.Stats(); st.Exact != 3 || st.Misses != 0 {
		t.Errorf("stats %+v", st)
	}
}

// mockDialer dials the address a name resolves to.
type mockDialer struct{ resolve map[string]string }

func (d *mockDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if to, ok := d.resolve[addr]; ok {
		addr = to
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, addr)
}
