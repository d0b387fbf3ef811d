// Package app is the demo workload of replay: a small orders service on
// PostgreSQL (pgx) with one outbound HTTPS dependency, used by `replay demo`
// and by tests as a real program to record, replay and compare.
//
// Endpoints:
//
//	POST /orders               create an order with its items (one transaction)
//	GET  /orders               the 50 newest orders with their item counts
//	GET  /orders/{id}          one order with its items
//	GET  /orders/{id}/status   the status of one order
//	GET  /catalog              the product list of the external catalog API
//
// With Config.Slow, GET /orders runs one query for the orders and then one
// query per order for its items: an N+1 that replay must detect. The SQL each
// endpoint runs, and so the exact number of statements per request, is
// documented on the handlers and proven by the package's tests. Config.Delay
// (APP_DELAY for Serve) adds a fixed wait to chosen routes: a slowdown that
// is not in the database; Config.Burn (APP_BURN) adds a busy loop of so
// much CPU time: a build that spends more CPU per request. Config.Change (APP_CHANGE) changes the answers
// on purpose: a field's type, a dropped field, a list's order, a status.
//
// New builds the service (and creates its schema), Serve runs it from
// environment variables as a program does, Seed and Traffic send it
// deterministic requests. The outbound client honours HTTPS_PROXY/HTTP_PROXY
// and SSL_CERT_FILE, as Go's defaults do, so replay can record and mock it.
//
// It is an example, not part of replay's API: no authentication, no paging,
// no updates of an order's status.
package app
