package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/replaykit/replay/examples/orders/app"
)

// endpoint is one kind of request a test sends.
type endpoint struct {
	// name is replay's endpoint for it ("GET /authors/{id}").
	name string
	// request returns the i-th request's method, path and body.
	request func(i int) (method, path string, body []byte)
}

// server is a server the tests start as a real process: command runs with
// sh -c and listens on $PORT, reaching PostgreSQL through $DATABASE_URL.
type server struct {
	name      string
	command   string
	endpoints []endpoint
	// slow is the endpoint whose statement needs the index the
	// candidate's database lacks; slowTable is that statement's table.
	slow, slowTable string
}

// nodeDir is where .ci/run installs the npm servers.
func nodeDir() string {
	if d := os.Getenv("REPLAY_E2E_NODE_DIR"); d != "" {
		return d
	}
	return "/var/cache/replay-e2e"
}

// need skips (or, in CI, fails) the test when file is missing.
func need(t *testing.T, what, file string) {
	t.Helper()
	if _, err := os.Stat(file); err == nil {
		return
	}
	msg := fmt.Sprintf("%s is not installed (%s missing): .ci/run installs it under %s", what, file, nodeDir())
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func gql(query string, vars map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	return b
}

// postGraphile is PostGraphile 4 (GraphQL over PostgreSQL, npm
// "postgraphile"): every operation is POST /graphql, and replay makes each
// an endpoint of its own ("POST /graphql {allBooks}").
func postGraphile(t *testing.T) server {
	cli := filepath.Join(nodeDir(), "postgraphile", "node_modules", "postgraphile", "cli.js")
	need(t, "PostGraphile", cli)
	const booksByAuthor = `query($a: Int!) { allBooks(condition: {authorId: $a}, orderBy: YEAR_DESC, first: 5) { totalCount nodes { id title year } } }`
	const author = `query Author($id: Int!) { authorById(id: $id) { id name } }`
	return server{
		name:    "postgraphile",
		command: fmt.Sprintf(`exec node %q -c "$DATABASE_URL" -p "$PORT" -n 127.0.0.1 --disable-graphiql --disable-query-log`, cli),
		endpoints: []endpoint{{
			name: "POST /graphql {allBooks}",
			request: func(i int) (string, string, []byte) {
				return "POST", "/graphql", gql(booksByAuthor, map[string]any{"a": 1 + (i*7)%authors})
			},
		}, {
			name: "POST /graphql {Author}",
			request: func(i int) (string, string, []byte) {
				return "POST", "/graphql", gql(author, map[string]any{"id": 1 + (i*13)%authors})
			},
		}},
		slow: "POST /graphql {allBooks}", slowTable: "books",
	}
}

// platformaticConfig is Platformatic DB's configuration: REST (and GraphQL)
// over every table, on $PORT, with the database from $PLT_DATABASE_URL.
const platformaticConfig = `{
  "server": {"hostname": "127.0.0.1", "port": "{PORT}", "logger": {"level": "warn"}},
  "db": {"connectionString": "{PLT_DATABASE_URL}", "graphql": true, "openapi": true},
  "watch": false
}`

// platformatic is Platformatic DB 2 (npm "@platformatic/db"): a REST API
// generated over the schema by its SQL mapper.
func platformatic(t *testing.T) server {
	bin := filepath.Join(nodeDir(), "platformatic", "node_modules", "@platformatic", "db", "db.mjs")
	need(t, "Platformatic DB", bin)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "platformatic.json"), []byte(platformaticConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	return server{
		name:    "platformatic",
		command: fmt.Sprintf(`cd %q && PLT_DATABASE_URL="$DATABASE_URL" exec node %q start -c platformatic.json`, dir, bin),
		endpoints: []endpoint{
			{name: "GET /authors/{id}", request: func(i int) (string, string, []byte) {
				return "GET", fmt.Sprintf("/authors/%d", 1+(i*13)%authors), nil
			}},
			{name: "GET /books", request: func(i int) (string, string, []byte) {
				return "GET", fmt.Sprintf("/books?where.authorId.eq=%d&orderby.year=desc&limit=5&totalCount=true", 1+(i*7)%authors), nil
			}},
		},
		slow: "GET /books", slowTable: "books",
	}
}

// demo is the demo's orders service (examples/orders) run by the replay
// binary; its database gets the demo's schema and 60 orders.
func demo(t *testing.T, c *cluster, db string) server {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.URL(db))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := app.Reset(ctx, pool, 60); err != nil {
		t.Fatal(err)
	}
	return server{
		name:    "demo",
		command: fmt.Sprintf("exec %q demo orders", replayBin),
		endpoints: []endpoint{
			{name: "GET /orders", request: func(i int) (string, string, []byte) { return "GET", "/orders", nil }},
			{name: "GET /orders/{id}", request: func(i int) (string, string, []byte) {
				return "GET", fmt.Sprintf("/orders/%d", 1+i%60), nil
			}},
			{name: "GET /orders/{id}/status", request: func(i int) (string, string, []byte) {
				return "GET", fmt.Sprintf("/orders/%d/status", 1+i%60), nil
			}},
		},
	}
}
