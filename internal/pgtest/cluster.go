package pgtest

import "github.com/replaykit/replay/internal/pgcluster"

// EnvURL names the environment variable whose value, when set, is used as the
// database instead of starting a cluster.
const EnvURL = "REPLAY_TEST_DATABASE_URL"

// Config says how to start a cluster; see pgcluster.Config.
type Config = pgcluster.Config

// Cluster is a running throwaway PostgreSQL server; see pgcluster.Cluster.
type Cluster = pgcluster.Cluster

// BinDir returns the directory that holds the PostgreSQL server binaries; see
// pgcluster.BinDir.
func BinDir() (string, error) { return pgcluster.BinDir() }
