package pgwire

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/pgtest"
)

// closedWithin waits for the server side to close c: a read ends in EOF or
// a reset before d. It fails the test when c is still open after d.
func closedWithin(t *testing.T, c net.Conn, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", d)
	}
}

// TestStartupTimeout: a client that connects and sends nothing is closed
// after the startup timeout, and counted.
func TestStartupTimeout(t *testing.T) {
	for _, mode := range []struct {
		name  string
		setup func(*Config)
	}{
		{"default", func(c *Config) { c.StartupTimeout = 300 * time.Millisecond }},
		{"goroutines", func(c *Config) { c.StartupTimeout, c.NoEventLoops = 300*time.Millisecond, true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			tp := startProxy(t, pgtest.Shared(t).Addr(), mode.setup)
			c, err := net.Dial("tcp", tp.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			closedWithin(t, c, 5*time.Second)
			if d := time.Since(start); d < 250*time.Millisecond {
				t.Errorf("closed after %v; want the startup timeout, 300ms", d)
			}
		})
	}
}

// TestIdleTimeout: an authenticated client with no statement in progress
// and no traffic for the idle timeout is closed, counted and logged once;
// a statement running longer than the timeout is not cut.
func TestIdleTimeout(t *testing.T) {
	for _, mode := range []struct {
		name  string
		setup func(*Config)
	}{
		{"default", func(c *Config) { c.IdleTimeout = 400 * time.Millisecond }},
		{"goroutines", func(c *Config) { c.IdleTimeout, c.NoEventLoops = 400*time.Millisecond, true }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			direct := pgtest.Database(t)
			c := pgtest.Shared(t)
			tp := startProxy(t, c.Addr(), mode.setup)
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, tp.url(c, dbName(t, direct)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			// Busy beyond the idle timeout: not idle.
			if _, err := conn.Exec(ctx, "SELECT pg_sleep(0.8)"); err != nil {
				t.Fatalf("a statement longer than the idle timeout: %v", err)
			}
			if n := tp.Stats().IdleClosed; n != 0 {
				t.Fatalf("IdleClosed = %d during a long statement; want 0", n)
			}
			time.Sleep(time.Second)
			if err := conn.Ping(ctx); err == nil {
				t.Fatal("the connection still answers after idling 1s past a 400ms idle timeout")
			}
			if n := tp.Stats().IdleClosed; n != 1 {
				t.Errorf("IdleClosed = %d; want 1", n)
			}
			tp.waitLog(t, "sqlcount: closing idle client connection")
		})
	}
}
