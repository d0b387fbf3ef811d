package mysqlwire

import (
	"context"
	"database/sql"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

func TestMain(m *testing.M) { os.Exit(mariadbtest.Main(m)) }

type (
	Proxy  = sqlcore.Proxy
	Config = sqlcore.Config
)

// testProxy is a MySQL proxy serving on a loopback port for one test.
type testProxy struct {
	*Proxy
	Addr string

	mu    sync.Mutex
	stmts []*snapshots.Statement
	logs  *syncbuf.Buffer
}

// startProxy starts a proxy to upstream that keeps every statement; setup,
// if any, adjusts its configuration.
func startProxy(t testing.TB, upstream string, setup ...func(*Config)) *testProxy {
	t.Helper()
	tp := &testProxy{logs: &syncbuf.Buffer{}}
	cfg := Config{
		Upstream: upstream,
		Protocol: "mysql",
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
	p, err := sqlcore.New(cfg, New())
	if err != nil {
		t.Fatal(err)
	}
	tp.Proxy = p
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp.Addr = l.Addr().String()
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

// waitLog waits until the proxy has logged text.
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

// open returns a database/sql pool through the proxy to database db.
func open(t testing.TB, s *mariadbtest.Server, addr, db string, params ...string) *sql.DB {
	t.Helper()
	pool, err := sql.Open("mysql", s.DSN(addr, db, params...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// logCounts returns, from the server's general log, the statements that
// ran (Query and Execute entries) per fingerprint, and their number. The
// log has a query string of several statements as one Query; the server
// runs (and the proxy counts) each.
func logCounts(entries []mariadbtest.LogEntry) (map[string]int, int) {
	m := map[string]int{}
	n := 0
	var sc scanner
	for _, e := range entries {
		switch e.Command {
		case "Execute":
			m[Fingerprint(e.Argument)]++
			n++
		case "Query":
			sc.scan([]byte(e.Argument), true)
			for _, sp := range sc.spans {
				m[Fingerprint(e.Argument[sp.start:sp.end])]++
				n++
			}
		}
	}
	return m, n
}

// proxyCounts returns the statements the proxy completed per fingerprint
// (errors included), and their number.
func proxyCounts(stmts []*snapshots.Statement) (map[string]int, int) {
	m := map[string]int{}
	for _, s := range stmts {
		m[s.Fingerprint]++
	}
	return m, len(stmts)
}
