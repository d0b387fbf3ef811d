// Package pgcluster starts throwaway PostgreSQL clusters from the installed
// binaries, for the demo and, through internal/pgtest, for tests.
//
// Start initialises a Cluster in a fresh temporary directory; it listens on
// 127.0.0.1 on a free port, trusts every local connection and runs with
// fsync off, and Config can add server settings or turn TLS on. When the
// process runs as root, the server runs as the "postgres" user, since
// PostgreSQL refuses to run as root. Stop removes everything it created.
// FromURL wraps a server someone else runs, which Stop leaves alone.
//
// It does not manage long-lived servers, never installs PostgreSQL (.ci/run
// makes sure the binaries are there) and imports nothing of "testing": the
// helpers that take a testing.TB live in internal/pgtest.
package pgcluster
