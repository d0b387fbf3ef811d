package mysqlwire

import (
	"context"
	"database/sql"
	"io"
	"net"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/mariadbtest"
)

// TestStartupTimeout: a client that takes the greeting and never answers
// is closed once the startup timeout has passed, and counted so.
func TestStartupTimeout(t *testing.T) {
	s := mariadbtest.Shared(t)
	tp := startProxy(t, s.Addr(), func(c *Config) { c.StartupTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", tp.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	io.Copy(io.Discard, c) // the greeting, then EOF when the proxy closes
	if d := time.Since(start); d < 250*time.Millisecond || d > 5*time.Second {
		t.Errorf("closed after %v, want about 300ms", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for tp.Stats().StartupClosed != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := tp.Stats().StartupClosed; n != 1 {
		t.Errorf("StartupClosed = %d, want 1", n)
	}
}

// TestIdleTimeout: an authenticated connection with nothing in progress is
// closed after the idle timeout; one busy with a long statement is not.
func TestIdleTimeout(t *testing.T) {
	s := mariadbtest.Shared(t)
	tp := startProxy(t, s.Addr(), func(c *Config) { c.IdleTimeout = 400 * time.Millisecond })
	db, err := sql.Open("mysql", s.DSN(tp.Addr, "mysql"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT SLEEP(0.8)"); err != nil {
		t.Fatalf("a statement longer than the idle timeout: %v", err)
	}
	if n := tp.Stats().IdleClosed; n != 0 {
		t.Fatalf("IdleClosed = %d while a statement ran, want 0", n)
	}
	time.Sleep(time.Second)
	if n := tp.Stats().IdleClosed; n != 1 {
		t.Errorf("IdleClosed = %d after idling, want 1", n)
	}
	if _, err := conn.ExecContext(ctx, "SELECT 1"); err == nil {
		t.Error("a connection closed for idling still works")
	}
}
