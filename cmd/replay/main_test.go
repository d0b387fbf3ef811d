package main

import (
	"os"
	"testing"

	"github.com/replaykit/replay/internal/mariadbtest"
	"github.com/replaykit/replay/internal/pgtest"
)

// TestMain stops the package's shared PostgreSQL cluster (pgtest.Shared)
// and MariaDB server (mariadbtest.Shared) after the tests: without it, every
// `go test` left them running.
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	mariadbtest.StopShared()
	os.Exit(code)
}
