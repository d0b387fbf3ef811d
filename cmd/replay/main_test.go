package main

import (
	"os"
	"testing"

	"github.com/replaykit/replay/internal/pgtest"
)

// TestMain stops the package's shared PostgreSQL cluster (pgtest.Shared)
// after the tests: without it, every `go test` left one running.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
