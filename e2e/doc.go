// Package e2e holds end-to-end tests of the replay binary on real PostgreSQL
// and real third-party servers that replay's authors did not write:
// PostGraphile (GraphQL) and Platformatic DB (REST over its SQL mapper), both
// from npm, plus the demo's orders service.
//
// Each test starts a throwaway cluster with log_statement=all and takes the
// server's own statement log as the truth: statements logged for the
// server's database in a window, divided by the requests sent in it. It then
// checks that `replay record` (under concurrent clients), `replay run`,
// `replay run --shards 2 --local` (every recorded request sent once in all,
// the shards merged) and `replay compare` report SQL per request within 10%
// of that truth, that a
// database-only slowdown (an index dropped on a large table) is explained as
// the database's and names the statement, and that a miswired comparison
// never reports 0 statements per request in silence.
//
// The npm servers are installed by .ci/run under /var/cache/replay-e2e
// (REPLAY_E2E_NODE_DIR overrides it); outside CI a test skips when its server
// is not installed. The package has no code outside its tests.
package e2e
