package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/replaykit/replay/internal/pgcluster"
)

// New returns a cluster for the test, stopped and removed when the test ends
// (also when it fails). When REPLAY_TEST_DATABASE_URL is set, it returns that
// server instead and Stop leaves it alone; a test that asks for a server
// with TLS starts its own all the same, since that one is not set up so.
func New(t testing.TB, cfg ...Config) *Cluster {
	t.Helper()
	if u := os.Getenv(EnvURL); u != "" && (len(cfg) == 0 || cfg[0].TLS == nil) {
		c, err := fromURL(u)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var c0 Config
	if len(cfg) > 0 {
		c0 = cfg[0]
	}
	c, err := pgcluster.Start(context.Background(), c0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	return c
}

// fromURL wraps the server named by EnvURL.
func fromURL(raw string) (*Cluster, error) {
	c, err := pgcluster.FromURL(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvURL, err)
	}
	return c, nil
}

var shared struct {
	sync.Mutex
	c   *Cluster
	err error
}

// Main runs the tests of a package whose tests call Database, then stops the
// shared cluster. Use it from TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	shared.Lock()
	if shared.c != nil {
		shared.c.Stop()
	}
	shared.Unlock()
	return code
}

// Database creates a new empty database for the test and returns its URL. The
// database lives in one cluster shared by the package's tests (started on
// first use; the package's TestMain must call Main) or in the server named by
// REPLAY_TEST_DATABASE_URL. It is dropped when the test ends.
func Database(t testing.TB) string {
	t.Helper()
	c := sharedCluster(t)
	name := "replay_test_" + randomSuffix()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatalf("connect to test postgres: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, c.URL("postgres"))
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return c.URL(name)
}

// Shared returns the package's shared cluster (see Database).
func Shared(t testing.TB) *Cluster {
	t.Helper()
	return sharedCluster(t)
}

func sharedCluster(t testing.TB) *Cluster {
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil && shared.err == nil {
		if u := os.Getenv(EnvURL); u != "" {
			shared.c, shared.err = fromURL(u)
		} else {
			shared.c, shared.err = pgcluster.Start(context.Background(), Config{})
		}
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

func randomSuffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
