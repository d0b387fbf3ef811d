package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// readBack opens the snapshot at path and returns its exchanges (by ID)
// and statements.
func readBack(t *testing.T, path string) ([]*snapshots.Exchange, []*snapshots.Statement) {
	t.Helper()
	snap, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	var xs []*snapshots.Exchange
	for x, err := range snap.Exchanges(context.Background(), snapshots.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	slices.SortFunc(xs, func(a, b *snapshots.Exchange) int { return int(a.ID - b.ID) })
	var sts []*snapshots.Statement
	for s, err := range snap.Statements(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		sts = append(sts, s)
	}
	return xs, sts
}

// getBody returns the body of a 200 response to GET u.
func getBody(client *http.Client, u string) (string, error) {
	resp, err := client.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s %q", u, resp.Status, b)
	}
	return string(b), err
}

// startShop starts a session around an app whose every request calls
// upstream through the outbound proxy and runs a statement on the real
// PostgreSQL db through the session's SQL proxy (sqlcount, as replay
// record wires it).
func startShop(t *testing.T, upstream string, db *pgtest.Cluster) (s *Session, path string, proxy *sqlcount.Proxy) {
	t.Helper()
	var appClient *http.Client // set before the app starts
	var connMu sync.Mutex
	var conn *pgx.Conn // opened by the first request, once the proxy listens
	t.Cleanup(func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	})
	app := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		item, err := getBody(appClient, upstream+"/catalog")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		connMu.Lock()
		defer connMu.Unlock()
		if conn == nil {
			if conn, err = pgx.Connect(r.Context(), strings.Replace(db.URL("postgres"), db.Addr(), s.PostgresAddr().String(), 1)); err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
		}
		if _, err := conn.Exec(r.Context(), "SELECT 1"); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, r.URL.Path+" "+item)
	}))
	t.Cleanup(app.Close)
	authority, err := ca.LoadOrCreate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rules, err := snapshots.ParseRules([]string{"GET /orders/{id}"})
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "s.snap")
	s, err = NewSession(SessionConfig{
		Snapshot: path,
		Rules:    rules,
		Inbound:  []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, "http://"+app.Listener.Addr().String())}},
		Outbound: &SessionOutbound{Listen: "127.0.0.1:0", CA: authority},
		Postgres: &SessionPostgres{Listen: "127.0.0.1:0", New: func(addr net.Addr, onStatement func(*snapshots.Statement)) (PostgresProxy, error) {
			p, err := sqlcount.New(sqlcount.Config{Upstream: db.Addr(), OnStatement: onStatement})
			proxy = p
			return p, err
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.InboundAddrs()) != 1 || s.OutboundAddr() == nil || s.PostgresAddr() == nil {
		t.Fatalf("addresses: inbound %v, outbound %v, postgres %v", s.InboundAddrs(), s.OutboundAddr(), s.PostgresAddr())
	}
	proxyURL := &url.URL{Scheme: "http", Host: s.OutboundAddr().String()}
	appClient = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}, Timeout: 30 * time.Second}
	app.Start()
	s.Start()
	return s, path, proxy
}

// TestSession records an app through all three proxies: each inbound
// request calls an upstream through the outbound proxy and runs a
// statement; the snapshot links both to the request.
func TestSession(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "pen")
	}))
	defer upstream.Close()
	s, path, proxy := startShop(t, upstream.URL, pgtest.New(t))
	front := "http://" + s.InboundAddrs()[0].String()
	for _, p := range []string{"/orders/1", "/orders/2"} {
		if got, err := getBody(http.DefaultClient, front+p); err != nil || got != p+" pen" {
			t.Errorf("GET %s = %q, %v; want %q", p, got, err, p+" pen")
		}
	}
	if err := s.Stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-s.Err():
		t.Errorf("Err() delivered %v", err)
	default:
	}

	xs, sts := readBack(t, path)
	checkLinked(t, xs, sts, proxy)
	var service string // the inbound proxy's, as the client addressed it
	for _, x := range xs {
		if x.Direction == snapshots.Inbound {
			service = x.Service
		}
	}
	want := TallySummary{
		Rows: []TallyRow{
			{Direction: snapshots.Inbound, Service: service, Endpoint: "GET /orders/{id}", Exchanges: 2, SQL: 2},
			{Direction: snapshots.Outbound, Service: upstream.Listener.Addr().String(), Endpoint: "GET /catalog", Exchanges: 2},
		},
		Statements: 2, Attributed: 2,
	}
	if diff := cmp.Diff(want, s.Summary()); diff != "" {
		t.Errorf("summary (-want +got):\n%s", diff)
	}
}

// checkLinked checks that the two inbound exchanges of xs each have an
// outbound call and a statement, and that the SQL proxy counted those two
// statements; it returns their IDs.
func checkLinked(t *testing.T, xs []*snapshots.Exchange, sts []*snapshots.Statement, proxy *sqlcount.Proxy) (inbound []int64) {
	t.Helper()
	for _, x := range xs {
		if x.Direction == snapshots.Inbound {
			inbound = append(inbound, x.ID)
		}
	}
	if len(xs) != 4 || len(inbound) != 2 {
		t.Fatalf("recorded %d exchanges, %d inbound; want 4, 2", len(xs), len(inbound))
	}
	var parents, attributed []int64
	for _, x := range xs {
		if x.Direction == snapshots.Outbound {
			parents = append(parents, x.ParentID)
		}
	}
	for _, st := range sts {
		attributed = append(attributed, st.ExchangeID)
	}
	slices.Sort(parents)
	slices.Sort(attributed)
	if diff := cmp.Diff(inbound, parents); diff != "" {
		t.Errorf("outbound calls' parents (-inbound +parents):\n%s", diff)
	}
	if diff := cmp.Diff(inbound, attributed); diff != "" {
		t.Errorf("statements' exchanges (-inbound +statements):\n%s", diff)
	}
	// Attribution to the inbound IDs above needs the recorder to have told
	// the proxy each request's begin and end.
	if n := proxy.Stats().Statements; n != 2 {
		t.Errorf("the SQL proxy counted %d statements; want 2", n)
	}
	return inbound
}

// TestSessionStopFinishesInFlight: Stop waits for a request in flight,
// which completes and is recorded.
func TestSessionStopFinishesInFlight(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "late")
	}))
	defer app.Close()
	path := filepath.Join(t.TempDir(), "s.snap")
	s, err := NewSession(SessionConfig{
		Snapshot: path,
		Inbound:  []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, app.URL)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	got := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + s.InboundAddrs()[0].String() + "/slow")
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- string(b)
	}()
	<-entered
	if n := s.InFlight(); n != 1 {
		t.Errorf("InFlight() = %d; want 1", n)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(30 * time.Second) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned %v with a request in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if b := <-got; b != "late" {
		t.Errorf("response %q; want late", b)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	xs, _ := readBack(t, path)
	if len(xs) != 1 || xs[0].Status != http.StatusOK || string(xs[0].ResponseBody) != "late" {
		t.Fatalf("recorded %+v; want the one late exchange", xs)
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestNewSessionLeavesNothingBehind: when a part fails, NewSession closes
// what it opened and removes the snapshot it created.
func TestNewSessionLeavesNothingBehind(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	app := mustURL(t, "http://127.0.0.1:1")
	failing := func(net.Addr, func(*snapshots.Statement)) (PostgresProxy, error) {
		return nil, errors.New("no server")
	}
	tests := []struct {
		name   string
		cfg    func(free string) SessionConfig
		part   Part
		target error
	}{
		{"second address in use", func(free string) SessionConfig {
			return SessionConfig{Inbound: []SessionInbound{{Listen: free, Target: app}, {Listen: busy.Addr().String(), Target: app}}}
		}, PartInbound, syscall.EADDRINUSE},
		{"postgres proxy fails", func(free string) SessionConfig {
			return SessionConfig{Inbound: []SessionInbound{{Listen: free, Target: app}}, Postgres: &SessionPostgres{Listen: "127.0.0.1:0", New: failing}}
		}, PartPostgres, nil},
		{"inbound target not HTTP", func(free string) SessionConfig {
			return SessionConfig{Inbound: []SessionInbound{{Listen: free, Target: mustURL(t, "ftp://x")}}}
		}, PartInbound, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			free := freeAddr(t)
			cfg := tt.cfg(free)
			cfg.Snapshot = filepath.Join(t.TempDir(), "s.snap")
			s, err := NewSession(cfg)
			var pe *PartError
			if s != nil || !errors.As(err, &pe) || pe.Part != tt.part {
				t.Fatalf("NewSession = %v, %v; want a %s *PartError", s, err, tt.part)
			}
			if tt.target != nil && !errors.Is(err, tt.target) {
				t.Errorf("error %v is not %v", err, tt.target)
			}
			if _, err := os.Stat(cfg.Snapshot); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the snapshot was left behind (%v)", err)
			}
			l, err := net.Listen("tcp", free)
			if err != nil {
				t.Fatalf("%s is still listened on: %v", free, err)
			}
			l.Close()
		})
	}
}

// TestNewSessionInvalid: a config that cannot work is refused before
// anything is opened.
func TestNewSessionInvalid(t *testing.T) {
	existing := filepath.Join(t.TempDir(), "old.snap")
	if err := os.WriteFile(existing, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := []SessionInbound{{Listen: "127.0.0.1:0", Target: mustURL(t, "http://127.0.0.1:1")}}
	tests := []struct {
		name string
		cfg  SessionConfig
		want error
	}{
		{"no snapshot", SessionConfig{Inbound: in}, nil},
		{"nothing to record", SessionConfig{Snapshot: filepath.Join(t.TempDir(), "s.snap")}, nil},
		{"outbound without CA", SessionConfig{Snapshot: filepath.Join(t.TempDir(), "s.snap"), Outbound: &SessionOutbound{Listen: "127.0.0.1:0"}}, nil},
		{"postgres without New", SessionConfig{Snapshot: filepath.Join(t.TempDir(), "s.snap"), Postgres: &SessionPostgres{Listen: "127.0.0.1:0"}}, nil},
		{"snapshot exists", SessionConfig{Snapshot: existing, Inbound: in}, snapshots.ErrExists},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewSession(tt.cfg)
			if s != nil || err == nil {
				t.Fatalf("NewSession = %v, %v; want an error", s, err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %v is not %v", err, tt.want)
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep me" {
		t.Errorf("the existing snapshot was changed")
	}
}
