// Package pgtest gives tests real PostgreSQL: a dedicated throwaway cluster
// per test (New), or a fresh database in a cluster shared by the package's
// tests (Database, Shared; TestMain must call Main).
//
// The clusters come from internal/pgcluster; Config, Cluster and BinDir are
// its names, repeated here so a test needs one import. When
// REPLAY_TEST_DATABASE_URL (EnvURL) is set, tests use that server instead of
// starting their own.
//
// It is for tests only: it imports "testing", so nothing in the replay binary
// may import it (the demo uses internal/pgcluster).
package pgtest
