// Package demo runs replay's whole flow on the demo workload
// (examples/orders), as `replay demo` does: it starts a throwaway
// PostgreSQL and an HTTPS stand-in for the catalog API, seeds the orders,
// records the orders service through a recorder.Session (inbound requests,
// its HTTPS calls through the intercepting proxy, its SQL through a
// sqlcount.Proxy), stops the stand-in, and compares APP_SLOW=0 with
// APP_SLOW=1 through session.Compare, with the catalog mocked and SQL
// counted per request.
//
// Run does it all and returns a Result; Result.Check says whether the
// comparison found what the demo expects, the N+1 in GET /orders and no
// other regression. Reset brings the demo's database back to its seeded
// state between the sides.
//
// Run narrates its steps on Config.Out. It does not render the recording's
// summary nor the comparison's report: Config.Recorded and Config.Compare
// let a caller (the CLI) print and write them. It parses no flags and reads
// no environment; the app's builds are the replay binary's hidden
// `demo orders` command (Config.Replay).
package demo
