package pgwire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/snapshots"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// testProxy is a proxy serving on a loopback port for one test.
type testProxy struct {
	*Proxy
	Addr string
	Host string
	Port int

	mu    sync.Mutex
	stmts []*snapshots.Statement
	logs  *syncbuf.Buffer
}

// startProxy starts a proxy to upstream that keeps every statement; setup,
// if any, adjusts the proxy before it serves.
func startProxy(t testing.TB, upstream string, setup ...func(*Config)) *testProxy {
	t.Helper()
	tp := &testProxy{logs: &syncbuf.Buffer{}}
	cfg := Config{
		Upstream: upstream,
		OnStatement: func(s *snapshots.Statement) {
			tp.mu.Lock()
			tp.stmts = append(tp.stmts, s)
			tp.mu.Unlock()
		},
		Logger: slog.New(slog.NewTextHandler(tp.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, f := range setup {
		f(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp.Proxy = p
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp.Addr = l.Addr().String()
	tp.Host = "127.0.0.1"
	tp.Port = l.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("Serve did not return after cancel")
		}
		if t.Failed() {
			t.Logf("proxy log:\n%s", tp.logs.String())
		}
	})
	return tp
}

// waitLog waits until the proxy has logged text (it logs once a connection
// has ended, after the client saw it close).
func (tp *testProxy) waitLog(t testing.TB, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(tp.logs.String(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("proxy log lacks %q:\n%s", text, tp.logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// statements returns a copy of the statements seen so far.
func (tp *testProxy) statements() []*snapshots.Statement {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]*snapshots.Statement(nil), tp.stmts...)
}

// statementsOnce returns the statements seen once there are at least n,
// waiting up to 5 s: a proxy that decodes the server's answers after
// relaying them (Config.DecodeAfterRelay, as replay sqlcount does) may
// count the last statement just after its client has the answer.
func (tp *testProxy) statementsOnce(n int) []*snapshots.Statement {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if s := tp.statements(); len(s) >= n || time.Now().After(deadline) {
			return s
		}
	}
}

// reset forgets the statements seen so far (Stats are not reset).
func (tp *testProxy) reset() {
	tp.mu.Lock()
	tp.stmts = nil
	tp.mu.Unlock()
}

// url returns a connection URL for database db through the proxy.
func (tp *testProxy) url(c *pgtest.Cluster, db string) string {
	return "postgres://" + c.User + "@" + tp.Addr + "/" + db + "?sslmode=disable"
}

// dbName returns the database name of a URL.
func dbName(t testing.TB, url string) string {
	t.Helper()
	i := strings.LastIndex(url, "/")
	name := url[i+1:]
	if j := strings.IndexByte(name, '?'); j >= 0 {
		name = name[:j]
	}
	return name
}

// fingerprintCounts returns count per fingerprint of the statements.
func fingerprintCounts(stmts []*snapshots.Statement) map[string]int {
	m := make(map[string]int)
	for _, s := range stmts {
		m[s.Fingerprint]++
	}
	return m
}

// bin returns the path of a PostgreSQL client program.
func bin(t testing.TB, name string) string {
	t.Helper()
	dir, err := pgtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		lp, lerr := exec.LookPath(name)
		if lerr != nil {
			t.Fatalf("%s not found in %s or on PATH", name, dir)
		}
		return lp
	}
	return p
}

// runTool runs a PostgreSQL client program and returns its output.
func runTool(t testing.TB, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin(t, name), args...)
	cmd.Env = append(os.Environ(), "PGCONNECT_TIMEOUT=30", "PGSSLMODE=disable")
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		t.Fatalf("%s: %v", name, err)
	}
	return string(out)
}

func itoa(n int) string { return strconv.Itoa(n) }
