package snapshots

import (
	"encoding/json"
	"net/url"
	"testing"
)

// gql returns a GraphQL request body.
func gql(query string, more ...string) string {
	m := map[string]any{"query": query}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestEndpointOfGraphQL(t *testing.T) {
	tests := []struct {
		name, method, url, body string
		want                    string
	}{
		{"anonymous shorthand", "POST", "/graphql", gql(`{ allBooks { title } }`), "POST /graphql {allBooks}"},
		{"anonymous query", "POST", "/graphql", gql(`query { author(id: 1) { name } }`), "POST /graphql {author}"},
		{"named in document", "POST", "/graphql", gql(`query Books { allBooks { title } }`), "POST /graphql {Books}"},
		{"operationName wins", "POST", "/graphql", gql(`query Books { allBooks { title } }`, "operationName", "Books2"), "POST /graphql {Books2}"},
		{"operationName picks an operation", "POST", "/graphql",
			gql(`query A { a } mutation B { b }`, "operationName", "B"), "POST /graphql {mutation B}"},
		{"bad operationName ignored", "POST", "/graphql", gql(`{ allBooks }`, "operationName", "a b"), "POST /graphql {allBooks}"},
		{"null operationName", "POST", "/graphql", `{"query":"{ allBooks }","operationName":null,"variables":null}`, "POST /graphql {allBooks}"},
		{"alias", "POST", "/graphql", gql(`{ books: allBooks(first: 3) { t: title } }`), "POST /graphql {allBooks}"},
		{"fragment first", "POST", "/graphql",
			gql("fragment F on Book { title }\nquery { allBooks { ...F } }"), "POST /graphql {allBooks}"},
		{"root spread", "POST", "/graphql",
			gql("query { ...Root }\nfragment Root on Query { b: allBooks { title } }"), "POST /graphql {allBooks}"},
		{"inline fragment", "POST", "/graphql", gql(`{ ... on Query { allBooks } }`), "POST /graphql {allBooks}"},
		{"fragment cycle", "POST", "/graphql", gql(`{ ...A } fragment A on Q { ...A }`), "POST /graphql"},
		{"comments", "POST", "/graphql",
			gql("# list books\n  # {notThis}\n{\n  # nor this\n  allBooks # trailing }\n}"), "POST /graphql {allBooks}"},
		{"variables and directives", "POST", "/graphql",
			gql(`query ($first: Int = 10, $f: Filter = {a: "}"}) @live { allBooks(first: $first) @include(if: true) { title } }`),
			"POST /graphql {allBooks}"},
		{"string arguments with braces", "POST", "/graphql",
			gql(`{ search(q: "{ not: field }", d: """ block " } """) { id } }`), "POST /graphql {search}"},
		{"mutation", "POST", "/graphql", gql(`mutation { createBook(title: "x") { id } }`), "POST /graphql {mutation createBook}"},
		{"named mutation", "POST", "/graphql", gql(`mutation AddBook($t: String!) { createBook(title: $t) { id } }`, "operationName", "AddBook"),
			"POST /graphql {mutation AddBook}"},
		{"subscription", "POST", "/graphql", gql(`subscription { bookAdded { id } }`), "POST /graphql {subscription bookAdded}"},
		{"batch", "POST", "/graphql", "[" + gql(`{ allBooks }`) + "," + gql(`mutation { createBook }`) + "]",
			"POST /graphql {allBooks,mutation createBook}"},
		{"batch with a stranger", "POST", "/graphql", "[" + gql(`{ allBooks }`) + `,{"x":1}]`, "POST /graphql"},
		{"empty batch", "POST", "/graphql", "[]", "POST /graphql"},
		{"persisted query", "POST", "/graphql",
			`{"operationName":"Books","extensions":{"persistedQuery":{"version":1,"sha256Hash":"abc"}}}`, "POST /graphql {Books}"},
		{"another path", "POST", "/api/v1/gql?x=1", gql(`{ me { id } }`), "POST /api/v1/gql {me}"},
		{"GET", "GET", "/graphql?query=" + url.QueryEscape(`{ allBooks { title } }`), "", "GET /graphql {allBooks}"},
		{"GET operationName", "GET", "/graphql?operationName=Books&query=" + url.QueryEscape(`query Books { allBooks }`), "", "GET /graphql {Books}"},
		{"GET search", "GET", "/search?query=shoes", "", "GET /search"},
		{"not GraphQL: a search", "POST", "/search", `{"query":"red shoes"}`, "POST /search"},
		{"not GraphQL: a word", "POST", "/search", `{"query":"query"}`, "POST /search"},
		{"not GraphQL: SDL", "POST", "/graphql", gql(`type Query { a: Int }`), "POST /graphql"},
		{"not GraphQL: no query", "POST", "/orders", `{"item":"book","qty":2}`, "POST /orders"},
		{"not GraphQL: query not a string", "POST", "/orders", `{"query":{"a":1}}`, "POST /orders"},
		{"empty selection", "POST", "/graphql", gql(`{ }`), "POST /graphql"},
		{"unbalanced", "POST", "/graphql", gql(`{ allBooks { title }`), "POST /graphql"},
		{"invalid JSON", "POST", "/graphql", `{"query":"{ allBooks }"`, "POST /graphql"},
		{"trailing data", "POST", "/graphql", gql(`{ allBooks }`) + "x", "POST /graphql"},
		{"PUT is no GraphQL", "PUT", "/graphql", gql(`{ allBooks }`), "PUT /graphql"},
		{"ids still templated", "POST", "/tenants/42/graphql", gql(`{ allBooks }`), "POST /tenants/{id}/graphql {allBooks}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Exchange{Method: tt.method, URL: tt.url, RequestBody: []byte(tt.body)}
			if got := EndpointOf(e, nil); got != tt.want {
				t.Errorf("EndpointOf(%s %s %s) = %q, want %q", tt.method, tt.url, tt.body, got, tt.want)
			}
			// The same request is always the same endpoint.
			if again := EndpointOf(e, nil); again != tt.want {
				t.Errorf("second EndpointOf = %q", again)
			}
		})
	}
}

func TestEndpointOfOutbound(t *testing.T) {
	e := &Exchange{Direction: Outbound, Method: "POST", URL: "https://api.example.com/graphql", RequestBody: []byte(gql(`{ a }`))}
	if got := EndpointOf(e, nil); got != "POST /graphql" {
		t.Errorf("outbound EndpointOf = %q, want POST /graphql (as the mock computes it)", got)
	}
}

func TestEndpointOfBodyRule(t *testing.T) {
	rules, err := ParseRules([]string{"json:$.method", "POST /rpc/{v}"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, url, body string
		want                    string
	}{
		{"JSON-RPC", "POST", "/rpc", `{"jsonrpc":"2.0","method":"getUser","params":[1],"id":1}`, "POST /rpc {getUser}"},
		{"with a template", "POST", "/rpc/v2", `{"method":"getUser"}`, "POST /rpc/{v} {getUser}"},
		{"number", "POST", "/rpc", `{"method":7}`, "POST /rpc {7}"},
		{"batch", "POST", "/rpc", `[{"method":"a"},{"method":"b"}]`, "POST /rpc {a,b}"},
		{"missing", "POST", "/rpc", `{"params":{}}`, "POST /rpc"},
		{"object value", "POST", "/rpc", `{"method":{"x":1}}`, "POST /rpc"},
		{"empty string", "POST", "/rpc", `{"method":""}`, "POST /rpc"},
		{"braces", "POST", "/rpc", `{"method":"a}b"}`, "POST /rpc"},
		{"invalid JSON", "POST", "/rpc", `{"method":"getUser"`, "POST /rpc"},
		{"GraphQL still split when the rule finds nothing", "POST", "/graphql", gql(`{ allBooks }`), "POST /graphql {allBooks}"},
		{"the rule wins over GraphQL", "POST", "/graphql", `{"query":"{ allBooks }","method":"m"}`, "POST /graphql {m}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Exchange{Method: tt.method, URL: tt.url, RequestBody: []byte(tt.body)}
			if got := EndpointOf(e, rules); got != tt.want {
				t.Errorf("EndpointOf(%s %s %s) = %q, want %q", tt.method, tt.url, tt.body, got, tt.want)
			}
		})
	}
}

func TestParseBodyRule(t *testing.T) {
	for _, s := range []string{"json:$.method", "json:$.params.op", "json:$.calls[0].name", "json:$[1]"} {
		r, err := ParseBodyRule(s)
		if err != nil {
			t.Errorf("ParseBodyRule(%q): %v", s, err)
			continue
		}
		if r.String() != s || !r.IsBodyRule() {
			t.Errorf("ParseBodyRule(%q).String() = %q", s, r.String())
		}
		if back, err := ParseRule(r.String()); err != nil || back.String() != s {
			t.Errorf("ParseRule(%q) = %v, %v", s, back, err)
		}
	}
	for _, s := range []string{"", "json:", "json:$", "json:method", "json:$.", "json:$..a", "json:$[x]", "json:$[0", "xml:/a", "$.method", "json:$.a b"} {
		if _, err := ParseBodyRule(s); err == nil {
			t.Errorf("ParseBodyRule(%q) succeeded", s)
		}
	}
}

func TestSplitEndpoint(t *testing.T) {
	tests := []struct{ ep, base, op string }{
		{"POST /graphql {allBooks}", "POST /graphql", "allBooks"},
		{"POST /graphql {mutation createBook}", "POST /graphql", "mutation createBook"},
		{"GET /orders/{id}", "GET /orders/{id}", ""},
		{"GET /", "GET /", ""},
	}
	for _, tt := range tests {
		base, op := SplitEndpoint(tt.ep)
		if base != tt.base || op != tt.op {
			t.Errorf("SplitEndpoint(%q) = %q, %q; want %q, %q", tt.ep, base, op, tt.base, tt.op)
		}
	}
}

func FuzzOperation(f *testing.F) {
	f.Add("POST", "/graphql", gql(`query A($a: Int) { b: c(x: "}") { ...F } } fragment F on T { d }`))
	f.Add("GET", "/graphql?query=%7Ba%7D", "")
	f.Add("POST", "/rpc", `[{"method":"a"}]`)
	rules, err := ParseRules([]string{"json:$.method"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, target, body string) {
		op := Operation(method, target, []byte(body), rules)
		if len(op) > 0 && op != Operation(method, target, []byte(body), rules) {
			t.Errorf("unstable operation %q", op)
		}
	})
}

func TestImportEndpoint(t *testing.T) {
	rpc, err := ParseRules([]string{"json:$.method"})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := ParseRules([]string{"POST /api/{v}"})
	if err != nil {
		t.Fatal(err)
	}
	books := []byte(gql(`{ allBooks }`))
	tests := []struct {
		name  string
		e     Exchange
		rules []Rule
		want  string
	}{
		{"empty stays empty", Exchange{Method: "POST", URL: "/graphql", RequestBody: books}, nil, ""},
		{"an older recording gains its operation", Exchange{Method: "POST", URL: "/graphql", RequestBody: books, Endpoint: "POST /graphql"}, nil, "POST /graphql {allBooks}"},
		{"a recorded operation stays", Exchange{Method: "POST", URL: "/graphql", RequestBody: books, Endpoint: "POST /graphql {Other}"}, nil, "POST /graphql {Other}"},
		{"a body rule replaces it", Exchange{Method: "POST", URL: "/rpc", RequestBody: []byte(`{"method":"b"}`), Endpoint: "POST /rpc {a}"}, rpc, "POST /rpc {b}"},
		{"a recorded template stays", Exchange{Method: "POST", URL: "/orders/7", RequestBody: []byte(`{"method":"b"}`), Endpoint: "POST /orders/{order}"}, rpc, "POST /orders/{order} {b}"},
		{"a template replaces, keeping the operation", Exchange{Method: "POST", URL: "/api/v1", RequestBody: books, Endpoint: "POST /api/v1"}, tmpl, "POST /api/{v} {allBooks}"},
		{"outbound: no operation", Exchange{Direction: Outbound, Method: "POST", URL: "/api/v1", RequestBody: books, Endpoint: "POST /api/v1"}, tmpl, "POST /api/{v}"},
		{"outbound recorded stays", Exchange{Direction: Outbound, Method: "POST", URL: "/graphql", RequestBody: books, Endpoint: "POST /graphql"}, nil, "POST /graphql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := importEndpoint(&tt.e, tt.rules); got != tt.want {
				t.Errorf("importEndpoint = %q, want %q", got, tt.want)
			}
		})
	}
}
