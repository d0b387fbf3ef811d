package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestClusterStartsAndStops(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("uses " + EnvURL)
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

func TestDatabasesAreIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := Database(t), Database(t)
	if a == b {
		t.Fatalf("two databases share a URL: %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename = 't'").Scan(&n)
	if n != 0 {
		t.Errorf("table created in one database is visible in the other")
	}
}

func TestSeveralClustersAtOnce(t *testing.T) {
	if os.Getenv(EnvURL) != "" {
		t.Skip("uses " + EnvURL)
	}
	a, b := New(t), New(t)
	if a.Port == b.Port {
		t.Fatalf("two clusters on one port %d", a.Port)
	}
	for _, c := range []*Cluster{a, b} {
		conn, err := pgx.Connect(context.Background(), c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		conn.Close(context.Background())
	}
}
