package pgcluster

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestClusterStartsAndStops(t *testing.T) {
	// Where tests use a server named by pgtest.EnvURL, the binaries may be absent.
	if os.Getenv("REPLAY_TEST_DATABASE_URL") != "" {
		t.Skip("uses REPLAY_TEST_DATABASE_URL")
	}
	c, err := Start(context.Background(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 = %d, %v", one, err)
	}
	var fsync string
	conn.QueryRow(ctx, "SHOW fsync").Scan(&fsync)
	if fsync != "off" {
		t.Errorf("fsync = %q, want off", fsync)
	}
	conn.Close(ctx)
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still exists after Stop", c.Dir)
	}
	if _, err := pgx.Connect(ctx, c.URL("postgres")); err == nil {
		t.Error("server still answers after Stop")
	}
}

// TestStopImmediately: an immediate shutdown cuts an open connection and
// refuses new ones; Stop then removes the directory.
func TestStopImmediately(t *testing.T) {
	if os.Getenv("REPLAY_TEST_DATABASE_URL") != "" {
		t.Skip("uses REPLAY_TEST_DATABASE_URL")
	}
	ctx := context.Background()
	c, err := Start(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := c.StopImmediately(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err == nil {
		t.Error("a connection opened before the shutdown still answers")
	}
	if _, err := net.DialTimeout("tcp", c.Addr(), time.Second); err == nil {
		t.Error("the server's port still accepts connections")
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("cluster dir %s still exists after Stop", c.Dir)
	}
	ext, err := FromURL(c.URL("postgres"))
	if err != nil || ext.StopImmediately() == nil {
		t.Errorf("StopImmediately of a server someone else runs: no error (%v)", err)
	}
}
