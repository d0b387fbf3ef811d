package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

// graphQLApp is a loopback app with one URL for everything, as GraphQL and
// JSON-RPC servers have: it answers with the body it was sent, and keeps
// the bodies.
type graphQLApp struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newGraphQLApp(t *testing.T) *graphQLApp {
	t.Helper()
	a := &graphQLApp{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		a.bodies = append(a.bodies, string(body))
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		out, _ := json.Marshal(map[string]string{"data": string(body) + r.URL.RawQuery})
		w.Write(out)
	}))
	t.Cleanup(a.Close)
	return a
}

func (a *graphQLApp) seen() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.bodies...)
}

// graphQLBody is a GraphQL POST body.
func graphQLBody(query string) string {
	b, _ := json.Marshal(map[string]any{"query": query, "variables": map[string]any{}})
	return string(b)
}

// post sends body to url and fails the test unless the answer is 200.
func post(t *testing.T, url, body string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("POST %s: %s", url, res.Status)
	}
}

// inspectEndpoints returns the inbound endpoints `replay inspect --format
// json` lists, with their counts.
func inspectEndpoints(t *testing.T, snap string) map[string]int64 {
	t.Helper()
	code, stdout, stderr := cliRun(t, "", "inspect", snap, "--format", "json")
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, stderr)
	}
	var got struct {
		Endpoints []struct {
			Direction string `json:"direction"`
			Endpoint  string `json:"endpoint"`
			Count     int64  `json:"count"`
		} `json:"endpoints"`
	}
	schematest.Check(t, "inspect", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	eps := map[string]int64{}
	for _, e := range got.Endpoints {
		if e.Direction == "inbound" {
			eps[e.Endpoint] += e.Count
		}
	}
	return eps
}

// TestRecordGraphQLOperations: requests to one GraphQL URL recorded through
// `replay record --inbound` are counted under one endpoint per operation,
// in the summary and in `replay inspect`.
func TestRecordGraphQLOperations(t *testing.T) {
	app := newGraphQLApp(t)
	snap := filepath.Join(t.TempDir(), "gql.snap")
	rec, stop := recordInProcess(t, &recordOptions{out: snap, inbound: []string{"127.0.0.1:0=" + app.URL}})
	front := "http://" + rec.InboundAddrs()[0].String() + "/graphql"

	post(t, front, graphQLBody(`{ allBooks { title } }`))
	post(t, front, graphQLBody("# the list\nquery { books: allBooks(first: 2) { title } }"))
	post(t, front, graphQLBody(`fragment B on Book { title } query { allBooks { ...B } }`))
	post(t, front, graphQLBody(`mutation ($t: String!) { createBook(title: $t) { id } }`))
	post(t, front, `{"query":"query Author { author(id: 1) { name } }","operationName":"Author"}`)
	post(t, front, `{"not":"graphql"}`)
	res, err := http.Get(front + "?query=" + url.QueryEscape(`{ allBooks { title } }`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()

	stdout, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	service := rec.InboundAddrs()[0].String()
	for _, row := range [][]string{
		{"inbound", service, "POST", "/graphql", "{allBooks}", "3"},
		{"inbound", service, "POST", "/graphql", "{mutation", "createBook}", "1"},
	} {
		if !hasRow(stdout, row...) {
			t.Errorf("no row %q in the summary:\n%s", row, stdout)
		}
	}
	want := map[string]int64{
		"POST /graphql {allBooks}":            3,
		"POST /graphql {mutation createBook}": 1,
		"POST /graphql {Author}":              1,
		"POST /graphql":                       1,
		"GET /graphql {allBooks}":             1,
	}
	if diff := cmp.Diff(want, inspectEndpoints(t, snap)); diff != "" {
		t.Errorf("inspect endpoints (-want +got):\n%s", diff)
	}

	// Stable: the same requests exported and imported again keep their
	// endpoints.
	jsonl := filepath.Join(t.TempDir(), "gql.jsonl")
	if code, _, stderr := cliRun(t, "", "snapshot", "export", snap, "--format", "jsonl", "--output", jsonl); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	again := filepath.Join(t.TempDir(), "again.snap")
	if code, _, stderr := cliRun(t, "", "snapshot", "import", jsonl, "--out", again); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	if diff := cmp.Diff(want, inspectEndpoints(t, again)); diff != "" {
		t.Errorf("endpoints after export and import (-want +got):\n%s", diff)
	}
}

// TestRecordEndpointBy: --endpoint-by json:$.method splits a JSON-RPC URL by
// method, is stored in the snapshot, and `snapshot import` applies it to a
// file recorded without it.
func TestRecordEndpointBy(t *testing.T) {
	app := newGraphQLApp(t)
	dir := t.TempDir()
	snap := filepath.Join(dir, "rpc.snap")
	rec, stop := recordInProcess(t, &recordOptions{out: snap, inbound: []string{"127.0.0.1:0=" + app.URL},
		endpointBy: []string{"json:$.method"}})
	front := "http://" + rec.InboundAddrs()[0].String() + "/rpc"
	calls := []string{
		`{"jsonrpc":"2.0","method":"getUser","params":{"id":1},"id":1}`,
		`{"jsonrpc":"2.0","method":"getUser","params":{"id":2},"id":2}`,
		`{"jsonrpc":"2.0","method":"listOrders","params":{},"id":3}`,
		`[{"jsonrpc":"2.0","method":"getUser","id":4},{"jsonrpc":"2.0","method":"listOrders","id":5}]`,
	}
	for _, c := range calls {
		post(t, front, c)
	}
	if _, err := stop(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"POST /rpc {getUser}": 2, "POST /rpc {listOrders}": 1, "POST /rpc {getUser,listOrders}": 1}
	if diff := cmp.Diff(want, inspectEndpoints(t, snap)); diff != "" {
		t.Errorf("inspect endpoints (-want +got):\n%s", diff)
	}
	s, err := snapshots.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := s.Rules()
	s.Close()
	if err != nil || len(rules) != 1 || rules[0].String() != "json:$.method" {
		t.Errorf("stored rules %v, %v; want json:$.method", rules, err)
	}

	// A recording made without the rule, then imported with it.
	plain := filepath.Join(dir, "plain.snap")
	w, err := snapshots.Create(plain, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls[:3] {
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app:80", Method: "POST",
			URL: "http://app/rpc", RequestBody: []byte(c), RequestBodySize: int64(len(c)), Status: 200,
			Start: time.Date(2025, 3, 1, 12, 0, i, 0, time.UTC)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := inspectEndpoints(t, plain); len(got) != 1 || got["POST /rpc"] != 3 {
		t.Errorf("without the rule: %v; want POST /rpc only", got)
	}
	jsonl := filepath.Join(dir, "plain.jsonl")
	if code, _, stderr := cliRun(t, "", "snapshot", "export", plain, "--format", "jsonl", "--output", jsonl); code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	split := filepath.Join(dir, "split.snap")
	if code, _, stderr := cliRun(t, "", "snapshot", "import", jsonl, "--out", split, "--endpoint-by", "json:$.method"); code != 0 {
		t.Fatalf("import: exit %d: %s", code, stderr)
	}
	if diff := cmp.Diff(map[string]int64{"POST /rpc {getUser}": 2, "POST /rpc {listOrders}": 1}, inspectEndpoints(t, split)); diff != "" {
		t.Errorf("imported with --endpoint-by (-want +got):\n%s", diff)
	}
}

func TestEndpointByUsageErrors(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.snap")
	jsonl := filepath.Join(dir, "x.jsonl")
	if err := os.WriteFile(jsonl, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"record", []string{"record", "--out", out, "--inbound", ":0=http://127.0.0.1:1", "--endpoint-by", "$.method"}, "record: --endpoint-by: "},
		{"record no path", []string{"record", "--out", out, "--inbound", ":0=http://127.0.0.1:1", "--endpoint-by", "json:$"}, "names nothing"},
		{"pcap", []string{"record", "--out", out, "--from-pcap", jsonl, "--endpoint-by", "json:method"}, "must start with $"},
		{"import", []string{"snapshot", "import", jsonl, "--out", out, "--endpoint-by", "xml:/a"}, "snapshot import: --endpoint-by: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, streams{in: strings.NewReader(""), out: &stdout, err: &stderr}); code != exitUsage {
				t.Errorf("exit code %d; want %d", code, exitUsage)
			}
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) {
				t.Errorf("stderr %q; want one line containing %q", msg, tt.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a snapshot was created")
			}
		})
	}
}

// TestRecordFromPcapEndpointBy: a capture's GraphQL and JSON-RPC requests
// are split as live ones are.
func TestRecordFromPcapEndpointBy(t *testing.T) {
	req := func(path, body string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: api:8080\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	capture := testCapture(t, map[int][][2]string{8080: {
		{req("/graphql", graphQLBody(`{ allBooks { title } }`)), ok("{}")},
		{req("/graphql", graphQLBody(`mutation { createBook(title: "x") { id } }`)), ok("{}")},
		{req("/rpc", `{"method":"getUser","id":1}`), ok("{}")},
	}})
	snap := filepath.Join(t.TempDir(), "out.snap")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"record", "--from-pcap", capture, "--out", snap, "--endpoint-by", "json:$.method"}, streams{out: &stdout, err: &stderr}); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	want := map[string]int64{"POST /graphql {allBooks}": 1, "POST /graphql {mutation createBook}": 1, "POST /rpc {getUser}": 1}
	if diff := cmp.Diff(want, inspectEndpoints(t, snap)); diff != "" {
		t.Errorf("inspect endpoints (-want +got):\n%s", diff)
	}
}

// TestRunOperationFilterAndGoal: `replay run` selects a GraphQL operation
// with --endpoint, by name or glob, and checks a goal on it.
func TestRunOperationFilterAndGoal(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "gql.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, q := range []string{`{ allBooks { title } }`, `mutation { createBook(title: "x") { id } }`, `{ allBooks { id } }`} {
		body := graphQLBody(q)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Inbound, Protocol: "http", Service: "app:80", Method: "POST",
			URL: "http://app/graphql", RequestHeader: http.Header{"Content-Type": {"application/json"}},
			RequestBody: []byte(body), RequestBodySize: int64(len(body)), Status: 200,
			Start: start.Add(time.Duration(i) * time.Millisecond), Duration: time.Millisecond})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		requests int64
		eps      []string
	}{
		{"by name", []string{"--endpoint", "POST /graphql {allBooks}", "--goal", "POST /graphql {allBooks}: p95<10s"}, 2, []string{"POST /graphql {allBooks}"}},
		{"by glob", []string{"--endpoint", "POST /graphql*", "--goal", "POST /graphql {mutation createBook}: success>99%"}, 3,
			[]string{"POST /graphql {allBooks}", "POST /graphql {mutation createBook}"}},
		{"by path glob", []string{"--endpoint", "/graphql {mutation*}"}, 1, []string{"POST /graphql {mutation createBook}"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := newGraphQLApp(t)
			args := append([]string{"--snapshot", snap, "--target", app.URL, "--out", filepath.Join(t.TempDir(), "r.run"), "--format", "json"}, tt.args...)
			code, stdout, stderr := replayRun(t, args...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %s", code, stderr)
			}
			v := decodeRunJSON(t, stdout)
			if !v.Passed || v.Requests != tt.requests {
				t.Errorf("passed %v, %d requests; want passed, %d", v.Passed, v.Requests, tt.requests)
			}
			for _, g := range v.Goals {
				if !g.Passed {
					t.Errorf("goal %q failed", g.Goal)
				}
			}
			var eps []string
			for _, e := range v.Endpoints {
				eps = append(eps, e.Endpoint)
			}
			if diff := cmp.Diff(tt.eps, eps); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
			if got := len(app.seen()); int64(got) != tt.requests {
				t.Errorf("the app got %d requests, want %d", got, tt.requests)
			}
		})
	}

	// A goal on the operation fails like any other.
	app := newGraphQLApp(t)
	code, stdout, _ := replayRun(t, "--snapshot", snap, "--target", app.URL, "--out", filepath.Join(t.TempDir(), "f.run"), "--format", "json",
		"--goal", "POST /graphql {allBooks}: p95<1us")
	if v := decodeRunJSON(t, stdout); code != exitRegression || v.Passed || len(v.Goals) != 1 || v.Goals[0].Passed {
		t.Errorf("exit %d json %+v; want 99 and the failed goal", code, v)
	}
}
