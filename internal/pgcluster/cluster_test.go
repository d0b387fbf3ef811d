package pgcluster

import (
	"context"
	"os"
	"testing"

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
