package replayer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

var traceparentRE = regexp.MustCompile(`^00-([0-9a-f]{32})-([0-9a-f]{16})-01$`)

func TestRequestsGoOutAsRecorded(t *testing.T) {
	tg := newTarget(t, nil)
	rec := &snapshots.Exchange{
		ID: 7, Direction: snapshots.Inbound, Method: "POST",
		URL: "http://app.local:8080/orders/new?sku=a%20b&n=2",
		RequestHeader: http.Header{
			"Content-Type":    {"application/json"},
			"X-Tenant":        {"acme"},
			"X-Route":         {"recorded"},
			"Authorization":   {"Bearer " + Redacted}, // the scheme kept at recording
			"X-Api-Key":       {Redacted},
			"Cookie":          {Redacted},
			"Connection":      {"keep-alive, X-Hop"},
			"X-Hop":           {"drop me"},
			"Content-Length":  {"999"},
			"Traceparent":     {"00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"},
			"Accept-Encoding": {"gzip"},
		},
		RequestBody: []byte(`{"sku":"a b","n":2}`),
		Status:      201,
	}
	r := newReplayer(t, Config{
		Target:    tg.URL,
		Exchanges: []*snapshots.Exchange{rec, rec},
		Header:    http.Header{"x-route": {"sandbox-1"}, "Cookie": {"session=s3cret"}},
	})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{}, &s); err != nil {
		t.Fatal(err)
	}
	reqs := tg.seen()
	if len(reqs) != 2 {
		t.Fatalf("target saw %d requests, want 2", len(reqs))
	}
	res := s.all()
	traces := map[string]bool{}
	for i, q := range reqs {
		if q.Method != "POST" || q.URI != "/orders/new?sku=a%20b&n=2" || q.Body != `{"sku":"a b","n":2}` {
			t.Errorf("request %d: %s %s %q", i, q.Method, q.URI, q.Body)
		}
		if q.Host != strings.TrimPrefix(tg.URL, "http://") {
			t.Errorf("request %d: Host %q, want the target's", i, q.Host)
		}
		want := map[string]string{
			"Content-Type":    "application/json",
			"X-Tenant":        "acme",
			"X-Route":         "sandbox-1",
			"Cookie":          "session=s3cret",
			"Authorization":   "",
			"X-Api-Key":       "",
			"X-Hop":           "",
			"Content-Length":  "19",
			"Accept-Encoding": "gzip",
		}
		got := map[string]string{}
		for k := range want {
			got[k] = q.Header.Get(k)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("request %d headers (-want +got):\n%s", i, diff)
		}
		m := traceparentRE.FindStringSubmatch(q.Header.Get("Traceparent"))
		if m == nil {
			t.Fatalf("request %d: traceparent %q is not a valid W3C traceparent", i, q.Header.Get("Traceparent"))
		}
		if m[1] == "0123456789abcdef0123456789abcdef" || strings.Trim(m[1], "0") == "" {
			t.Errorf("request %d: trace id %s is not fresh", i, m[1])
		}
		traces[m[1]] = true
		if res[i].TraceID != m[1] {
			t.Errorf("result %d trace id %q, target saw %q", i, res[i].TraceID, m[1])
		}
		if res[i].Status != 200 || res[i].RecordedStatus != 201 || res[i].Failed() {
			t.Errorf("result %d: status %d recorded %d failed %v", i, res[i].Status, res[i].RecordedStatus, res[i].Failed())
		}
	}
	if len(traces) != 2 {
		t.Errorf("trace ids %v: want a fresh one per request", traces)
	}
}

func TestHostHeaderOverrideAndTargetPathPrefix(t *testing.T) {
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{
		Target:    tg.URL + "/base/",
		Exchanges: exchanges(1),
		Header:    http.Header{"Host": {"orders.internal"}},
	})
	if _, err := r.Run(context.Background(), LoadPlan{}, &sink{}); err != nil {
		t.Fatal(err)
	}
	q := tg.seen()[0]
	if q.Host != "orders.internal" || q.URI != "/base/items/1" {
		t.Errorf("Host %q URI %q; want orders.internal /base/items/1", q.Host, q.URI)
	}
}

func TestEndpointFilter(t *testing.T) {
	var ex []*snapshots.Exchange
	for i, u := range []string{"GET /orders", "GET /orders/1", "GET /orders/2/status", "POST /orders", "GET /catalog"} {
		method, path, _ := strings.Cut(u, " ")
		ex = append(ex, &snapshots.Exchange{ID: int64(i + 1), Direction: snapshots.Inbound, Method: method, URL: "http://app" + path,
			Endpoint: snapshots.Endpoint(method, path, nil)})
	}
	for i, op := range []string{`{ allBooks { title } }`, `mutation { createBook(title: "x") { id } }`} {
		e := &snapshots.Exchange{ID: int64(i + 6), Direction: snapshots.Inbound, Method: "POST", URL: "http://app/graphql?op=" + strconv.Itoa(i),
			RequestBody: []byte(`{"query":` + strconv.Quote(op) + `}`)}
		e.Endpoint = snapshots.EndpointOf(e, nil)
		ex = append(ex, e)
	}
	ex = append(ex, &snapshots.Exchange{ID: 9, Direction: snapshots.Outbound, Method: "GET", URL: "https://catalog.example/items", Endpoint: "GET /items"})
	tests := []struct {
		filter []string
		want   []string
	}{
		{nil, []string{"/orders", "/orders/1", "/orders/2/status", "/orders", "/catalog", "/graphql?op=0", "/graphql?op=1"}},
		{[]string{"GET /orders"}, []string{"/orders"}},
		{[]string{"get  /orders/{id}"}, []string{"/orders/1"}},
		{[]string{"GET /orders*"}, []string{"/orders", "/orders/1", "/orders/2/status"}},
		{[]string{"/orders/*"}, []string{"/orders/1", "/orders/2/status"}},
		{[]string{"* /orders"}, []string{"/orders", "/orders"}},
		{[]string{"POST /orders", "GET /catalog"}, []string{"/orders", "/catalog"}},
		{[]string{"POST /graphql {allBooks}"}, []string{"/graphql?op=0"}},
		{[]string{"post  /graphql  {mutation createBook}"}, []string{"/graphql?op=1"}},
		{[]string{"POST /graphql*"}, []string{"/graphql?op=0", "/graphql?op=1"}},
		{[]string{"POST /graphql"}, []string{"/graphql?op=0", "/graphql?op=1"}},
		{[]string{"/graphql"}, []string{"/graphql?op=0", "/graphql?op=1"}},
		{[]string{"/graphql {all*}"}, []string{"/graphql?op=0"}},
		{[]string{"* /graphql {*create*}"}, []string{"/graphql?op=1"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.filter, ","), func(t *testing.T) {
			tg := newTarget(t, nil)
			r := newReplayer(t, Config{Target: tg.URL, Exchanges: ex, Endpoints: tt.filter})
			if _, err := r.Run(context.Background(), LoadPlan{}, &sink{}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, q := range tg.seen() {
				got = append(got, q.URI)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
		})
	}
	_, err := New(Config{Target: "http://127.0.0.1:1", Exchanges: ex, Endpoints: []string{"GET /nope"}})
	if !errors.Is(err, ErrNoRequests) || !strings.Contains(err.Error(), "GET /orders/{id}") {
		t.Errorf("err = %v; want ErrNoRequests listing the endpoints", err)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no target", Config{Exchanges: exchanges(1)}, "no target"},
		{"bad scheme", Config{Target: "ftp://x", Exchanges: exchanges(1)}, "http:// or https://"},
		{"no host", Config{Target: "http://", Exchanges: exchanges(1)}, "with a host"},
		{"query", Config{Target: "http://x/?a=1", Exchanges: exchanges(1)}, "query"},
		{"no exchanges", Config{Target: "http://x"}, "no recorded inbound request"},
		{"bad filter", Config{Target: "http://x", Exchanges: exchanges(1), Endpoints: []string{"orders"}}, "endpoint filter"},
		{"negative timeout", Config{Target: "http://x", Exchanges: exchanges(1), Timeout: -1}, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestTransportErrorIsAResult(t *testing.T) {
	tg := newTarget(t, nil)
	url := tg.URL
	tg.Close()
	r := newReplayer(t, Config{Target: url, Exchanges: exchanges(2)})
	var s sink
	st, err := r.Run(context.Background(), LoadPlan{}, &s)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failures != 2 {
		t.Errorf("failures %d, want 2", st.Failures)
	}
	for _, x := range s.all() {
		if !strings.Contains(x.Error, "connection refused") || x.Status != 0 || !x.Failed() {
			t.Errorf("result %+v; want a connection refused failure", x)
		}
	}
}

// counter is an in-memory SQLCounter: it attributes one statement to each
// request and records the order of calls.
type counter struct {
	mu     sync.Mutex
	open   map[int64]string
	calls  []string
	traces map[string]bool
}

func (c *counter) Begin(id int64, traceID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.open == nil {
		c.open, c.traces = map[int64]string{}, map[string]bool{}
	}
	c.open[id] = traceID
	c.traces[traceID] = true
	c.calls = append(c.calls, "begin")
}

func (c *counter) End(id int64) []snapshots.SQLCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.open[id]; !ok {
		c.calls = append(c.calls, "end of unknown id")
		return nil
	}
	delete(c.open, id)
	c.calls = append(c.calls, "end")
	return []snapshots.SQLCount{{Fingerprint: "SELECT ?", Count: 1, Duration: time.Millisecond}}
}

func TestExplainPhaseThenLoadWithSQLCounts(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(10 * time.Millisecond) })
	var ex []*snapshots.Exchange
	for i := range 15 {
		path := []string{"/a", "/b/1", "/c"}[i%3]
		ex = append(ex, &snapshots.Exchange{ID: int64(i + 1), Direction: snapshots.Inbound, Method: "GET", URL: "http://app" + path, Status: 200})
	}
	var c counter
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: ex, SQL: &c})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Explain: 2, VUs: 3, Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	// Each endpoint's 5 requests have one shape: one explain request each,
	// standing for 5, after one warm-up request per endpoint.
	res := s.all()
	if len(res) != 3+15 {
		t.Fatalf("%d results, want 3 explain + 15 load", len(res))
	}
	perEndpoint := map[string]int{}
	for i, x := range res[:3] {
		if x.Phase != snapshots.PhaseExplain || !x.SQLCounted || x.Statements() != 1 {
			t.Errorf("explain result %d: %+v", i, x)
		}
		perEndpoint[x.Endpoint]++
	}
	if diff := cmp.Diff(map[string]int{"GET /a": 1, "GET /b/{id}": 1, "GET /c": 1}, perEndpoint); diff != "" {
		t.Errorf("explain requests per endpoint (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[int64]float64{1: 5, 2: 5, 3: 5}, r.ExplainWeights(2)); diff != "" {
		t.Errorf("explain weights (-want +got):\n%s", diff)
	}
	for _, q := range tg.seen()[:6] {
		if q.Concurrent != 1 {
			t.Errorf("a warm-up or explain request arrived with %d in flight; want one at a time", q.Concurrent)
		}
	}
	res = res[3:]
	if n := len(c.calls); n != 2*18 {
		t.Errorf("%d counter calls, want 36: warm-up requests are not counted", n)
	}
	notAlone := 0
	for _, x := range res {
		if x.Phase != snapshots.PhaseLoad || len(x.SQL) != 1 || !c.traces[x.TraceID] {
			t.Errorf("load result %+v", x)
		}
		if !x.SQLCounted {
			notAlone++
		}
	}
	if notAlone == 0 {
		t.Errorf("with 3 VUs every load request was counted as alone; want overlapping ones marked SQLCounted=false")
	}
	for _, call := range c.calls {
		if call != "begin" && call != "end" {
			t.Errorf("counter call %q", call)
		}
	}
	// The explain phase does not move the load's position.
	if r.Position() != 15 {
		t.Errorf("position %d, want 15", r.Position())
	}
}

func TestSQLTracedCountsEveryRequest(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(5 * time.Millisecond) })
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(6), SQL: &counter{}, SQLTraced: true})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 3}, &s); err != nil {
		t.Fatal(err)
	}
	for _, x := range s.all() {
		if !x.SQLCounted {
			t.Errorf("result %d not counted although the target traces SQL", x.ExchangeID)
		}
	}
}

func TestTraceparentFormat(t *testing.T) {
	seen := map[int64]bool{}
	for range 1000 {
		tp, trace, id := newTraceparent()
		if m := traceparentRE.FindStringSubmatch(tp); m == nil || m[1] != trace {
			t.Fatalf("traceparent %q trace %q", tp, trace)
		}
		if id <= 0 || seen[id] {
			t.Fatalf("id %d is not a fresh positive id", id)
		}
		seen[id] = true
	}
}

func TestPutHex64(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xf, 0x10, 0xab, 0x0123456789abcdef, 0xfedcba9876543210, math.MaxUint64, 1 << 63} {
		var b [16]byte
		putHex64(b[:], v)
		if want := fmt.Sprintf("%016x", v); string(b[:]) != want {
			t.Errorf("putHex64(%#x) = %q, want %q", v, b[:], want)
		}
	}
}

func TestCanceledRunDropsCutRequests(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tg := newTarget(t, nil)
	tg.holdCtx = func(rctx context.Context) {
		cancel()
		<-rctx.Done()
	}
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3)})
	var s sink
	_, err := r.Run(ctx, LoadPlan{VUs: 2, Duration: time.Minute}, &s)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(s.all()); n != 0 {
		t.Errorf("%d results from requests cut by the cancellation; want none", n)
	}
}

func TestResultsCarryOperationEndpoints(t *testing.T) {
	body := []byte(`{"query":"query Books { allBooks { title } }"}`)
	ex := []*snapshots.Exchange{
		{ID: 1, Direction: snapshots.Inbound, Method: "POST", URL: "/graphql", RequestBody: body, Endpoint: "POST /graphql {Books}"},
		{ID: 2, Direction: snapshots.Inbound, Method: "POST", URL: "/graphql", RequestBody: body}, // no endpoint recorded: computed alike
	}
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: ex})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{}, &s); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, res := range s.all() {
		got = append(got, res.Endpoint)
	}
	if diff := cmp.Diff([]string{"POST /graphql {Books}", "POST /graphql {Books}"}, got); diff != "" {
		t.Errorf("result endpoints (-want +got):\n%s", diff)
	}
}
