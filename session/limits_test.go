package session

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/conntest"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/internal/pgtest"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
)

// TestSideListenersBounded: a side's mock and SQL counter, given addresses
// without a host, listen on loopback; the mock closes a client stalling in
// its headers after the read-header timeout, and the counter one that
// never starts up after the startup timeout.
func TestSideListenersBounded(t *testing.T) {
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer app.Close()
	var warnings []string
	var mu sync.Mutex
	checked := false
	_, err := Run(context.Background(), RunConfig{
		Config: Config{
			Inbound:  inbound("/a"),
			Mock:     &mock.Config{},
			CADir:    filepath.Join(t.TempDir(), "ca"),
			Postgres: &Postgres{Upstream: pgtest.Shared(t).Addr()},
			Limits:   listen.Limits{ReadHeaderTimeout: 300 * time.Millisecond, SQLStartupTimeout: 300 * time.Millisecond},
			Warn:     func(err error) { mu.Lock(); warnings = append(warnings, err.Error()); mu.Unlock() },
			Listening: func(s *Side) {
				checked = true
				for what, addr := range map[string]string{"mock": s.MockAddr(), "SQL counter": s.SQLAddr()} {
					if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
						t.Errorf("the %s listens on %s; want 127.0.0.1 for an address without a host", what, addr)
					}
				}
				if d := conntest.StallHeaders(t, conntest.Dial(t, s.MockAddr()), 5*time.Second); d < 150*time.Millisecond {
					t.Errorf("the mock closed a slow client after %v; want 300ms", d)
				}
				if d := conntest.Closed(t, conntest.Dial(t, s.SQLAddr()), 5*time.Second); d < 150*time.Millisecond {
					t.Errorf("the SQL counter closed a silent client after %v; want 300ms", d)
				}
			},
		},
		Side: SideConfig{Name: "candidate", URL: app.URL, RunPath: filepath.Join(t.TempDir(), "run.db"),
			MockListen: ":0", PostgresListen: ":0"},
		Plan: replayer.LoadPlan{VUs: 1, Duration: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !checked {
		t.Fatal("Listening was not called")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) > 0 {
		t.Errorf("warnings for loopback listeners: %s", strings.Join(warnings, "; "))
	}
}
