package mock

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/idlist"
	"github.com/replaykit/replay/snapshots"
)

// base is when the test recordings start.
var base = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// rec builds a recorded outbound exchange; the response body is respBody,
// status 200 and Content-Type text/plain unless changed afterwards.
func rec(id int64, method, rawURL, reqBody, respBody string) *snapshots.Exchange {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	e := &snapshots.Exchange{
		ID:             id,
		Direction:      snapshots.Outbound,
		Protocol:       u.Scheme,
		Service:        u.Hostname() + ":" + port,
		Start:          base.Add(time.Duration(id) * time.Millisecond),
		Duration:       time.Millisecond,
		Method:         method,
		URL:            rawURL,
		RequestHeader:  http.Header{},
		Status:         200,
		ResponseHeader: http.Header{"Content-Type": {"text/plain"}},
		ResponseBody:   []byte(respBody),
	}
	if reqBody != "" {
		e.RequestBody = []byte(reqBody)
		e.RequestBodySize = int64(len(reqBody))
		e.RequestHeader.Set("Content-Type", "application/json")
	}
	e.ResponseBodySize = int64(len(e.ResponseBody))
	return e
}

// ask reduces a request the way the server does.
func ask(t *testing.T, method, rawURL, body string) request {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := normService(u.Host, u.Scheme)
	if err != nil {
		t.Fatal(err)
	}
	ct := ""
	if body != "" {
		ct = "application/json"
	}
	return newRequest(method, u.Scheme, svc, u, ct, []byte(body))
}

// testMatcher is a matcher whose match returns the answering exchange.
type testMatcher struct {
	*matcher
	byID  map[int64]*snapshots.Exchange
	calls *idlist.List
}

// hit is a match: the recorded exchange that answers.
type hit struct{ ex *snapshots.Exchange }

func (m testMatcher) match(q *request) (*hit, Level) {
	en, pos, level := m.matcher.match(q)
	if en == nil {
		return nil, level
	}
	return &hit{ex: m.byID[m.calls.At(pos)]}, level
}

func newTestMatcher(t *testing.T, exs ...*snapshots.Exchange) testMatcher {
	t.Helper()
	m, calls, err := newMatcher(exs, newVolatility([]string{"session"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	tm := testMatcher{matcher: m, byID: map[int64]*snapshots.Exchange{}, calls: calls}
	for _, e := range exs {
		tm.byID[e.ID] = e
	}
	return tm
}

func TestMatchLevels(t *testing.T) {
	m := newTestMatcher(t,
		rec(1, "GET", "https://api.test/a?x=1&y=2", "", "a-x1"),
		rec(2, "GET", "https://api.test/a?x=2&y=2", "", "a-x2"),
		rec(3, "GET", "https://api.test/search?q=shoes&ts=1700000000", "", "search"),
		rec(4, "POST", "https://api.test/orders", `{"item":"book","qty":2,"meta":{"request_id":"r-1","at":"2025-03-01T12:00:00Z"}}`, "order"),
		rec(5, "GET", "https://api.test/items/42?view=full", "", "item42"),
		rec(6, "GET", "https://api.test/items/43?view=short", "", "item43"),
		rec(7, "POST", "https://api.test/login", `{"user":"bob","session":"s-1"}`, "login"),
		rec(8, "GET", "http://plain.test:8080/ping", "", "pong"),
		rec(9, "GET", "https://api.test/things/3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8", "", "thing"),
	)
	tests := []struct {
		name         string
		method, url  string
		body         string
		wantBody     string
		wantLevel    Level
		wantNoAnswer bool
	}{
		{"exact", "GET", "https://api.test/a?x=2&y=2", "", "a-x2", Exact, false},
		{"explicit default port", "GET", "https://api.test:443/a?x=1&y=2", "", "a-x1", Exact, false},
		{"host case", "GET", "https://API.test/a?x=1&y=2", "", "a-x1", Exact, false},
		{"query order", "GET", "https://api.test/a?y=2&x=1", "", "a-x1", Loose, false},
		{"volatile query value by key", "GET", "https://api.test/search?ts=1800000000&q=shoes", "", "search", Loose, false},
		{"json canonical", "POST", "https://api.test/orders", "{ \"qty\": 2,\n \"meta\": {\"at\":\"2025-03-01T12:00:00Z\", \"request_id\":\"r-1\"}, \"item\": \"book\" }", "order", Exact, false},
		{"json volatile", "POST", "https://api.test/orders", `{"item":"book","qty":2,"meta":{"request_id":"r-999","at":"2026-01-02T03:04:05+02:00"}}`, "order", Loose, false},
		{"json configured volatile key", "POST", "https://api.test/login", `{"session":"s-2","user":"bob"}`, "login", Loose, false},
		{"template", "GET", "https://api.test/items/7?view=short", "", "item43", Template, false},
		{"template uuid", "GET", "https://api.test/things/00000000-1111-2222-3333-444444444444", "", "thing", Template, false},
		{"plain http port", "GET", "http://plain.test:8080/ping", "", "pong", Exact, false},
		{"query value differs", "GET", "https://api.test/a?x=3&y=2", "", "", 0, true},
		{"json value differs", "POST", "https://api.test/orders", `{"item":"pen","qty":2}`, "", 0, true},
		{"method differs", "DELETE", "https://api.test/items/42?view=full", "", "", 0, true},
		{"other port", "GET", "http://plain.test:8081/ping", "", "", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := ask(t, tt.method, tt.url, tt.body)
			en, level := m.match(&q)
			if tt.wantNoAnswer {
				if en != nil {
					t.Fatalf("matched %s at %s, want a miss", en.ex.URL, level)
				}
				return
			}
			if en == nil {
				t.Fatalf("miss: %v", m.explain(&q))
			}
			if got := string(en.ex.ResponseBody); got != tt.wantBody || level != tt.wantLevel {
				t.Errorf("got %q at %s, want %q at %s", got, level, tt.wantBody, tt.wantLevel)
			}
		})
	}
}

func TestMatchSequence(t *testing.T) {
	m := newTestMatcher(t,
		rec(1, "GET", "https://api.test/job/7", "", "pending"),
		rec(2, "GET", "https://api.test/other", "", "other"),
		rec(3, "GET", "https://api.test/job/7", "", "running"),
		rec(4, "GET", "https://api.test/job/7", "", "done"),
	)
	var got []string
	for range 6 {
		q := ask(t, "GET", "https://api.test/job/7", "")
		en, _ := m.match(&q)
		if en == nil {
			t.Fatal("miss")
		}
		got = append(got, string(en.ex.ResponseBody))
	}
	want := []string{"pending", "running", "done", "done", "done", "done"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sequence (-want +got):\n%s", d)
	}
}

// A loose match does not reuse an exchange an exact match already answered
// with while unused ones are left.
func TestMatchSequenceAcrossLevels(t *testing.T) {
	m := newTestMatcher(t,
		rec(1, "GET", "https://api.test/poll?ts=1700000001", "", "first"),
		rec(2, "GET", "https://api.test/poll?ts=1700000002", "", "second"),
	)
	var got []string
	for _, u := range []string{"https://api.test/poll?ts=1700000001", "https://api.test/poll?ts=1800000000", "https://api.test/poll?ts=1800000001"} {
		q := ask(t, "GET", u, "")
		en, _ := m.match(&q)
		if en == nil {
			t.Fatal("miss")
		}
		got = append(got, string(en.ex.ResponseBody))
	}
	if d := cmp.Diff([]string{"first", "second", "second"}, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestMissExplanation(t *testing.T) {
	m := newTestMatcher(t,
		rec(1, "GET", "https://api.test/a?x=1", "", ""),
		rec(2, "GET", "https://api.test/b/c?z=1", "", ""),
		rec(3, "POST", "https://api.test/orders", `{"item":"book","qty":2,"tags":["a"]}`, ""),
		rec(4, "PUT", "https://api.test/raw", "hello world", ""),
	)
	tests := []struct {
		name, method, url, body string
		want                    MissError
	}{
		{"query value", "GET", "https://api.test/a?x=2", "", MissError{
			Request: "GET https://api.test/a?x=2", Closest: "GET https://api.test/a?x=1",
			Differences: []string{"query x: got 2, recorded 1"}}},
		{"query extra and missing", "GET", "https://api.test/a?y=5", "", MissError{
			Request: "GET https://api.test/a?y=5", Closest: "GET https://api.test/a?x=1",
			Differences: []string{"query x: missing, recorded 1", "query y: got 5, not recorded"}}},
		{"path", "GET", "https://api.test/b/d?z=1", "", MissError{
			Request: "GET https://api.test/b/d?z=1", Closest: "GET https://api.test/b/c?z=1",
			Differences: []string{"path: got /b/d, recorded /b/c"}}},
		{"method", "PATCH", "https://api.test/b/c?z=1", "", MissError{
			Request: "PATCH https://api.test/b/c?z=1", Closest: "GET https://api.test/b/c?z=1",
			Differences: []string{"method: got PATCH, recorded GET"}}},
		{"json body", "POST", "https://api.test/orders", `{"item":"pen","tags":["a","b"]}`, MissError{
			Request: "POST https://api.test/orders", Closest: "POST https://api.test/orders",
			Differences: []string{`body $.item: got "pen", recorded "book"`, "body $.qty: missing, recorded 2", `body $.tags[1]: got "b", not recorded`}}},
		{"raw body", "PUT", "https://api.test/raw", "hello there", MissError{
			Request: "PUT https://api.test/raw", Closest: "PUT https://api.test/raw",
			Differences: []string{"body: got 11 bytes, recorded 11 bytes, first difference at byte 6"}}},
		{"other service", "GET", "https://other.test/a?x=1", "", MissError{
			Request: "GET https://other.test/a?x=1", Closest: "GET https://api.test/a?x=1",
			Differences: []string{"service: got other.test:443, recorded api.test:443"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := ask(t, tt.method, tt.url, tt.body)
			if en, level := m.match(&q); en != nil {
				t.Fatalf("matched %s at %s, want a miss", en.ex.URL, level)
			}
			got := m.explain(&q)
			tt.want.Count = 1
			if d := cmp.Diff(&tt.want, got); d != "" {
				t.Errorf("explanation (-want +got):\n%s", d)
			}
			if !strings.Contains(got.Error(), tt.want.Request) {
				t.Errorf("Error() = %q does not name the request", got.Error())
			}
		})
	}
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		a, b  string
		equal bool
	}{
		{`{"a":1,"b":[1,2]}`, "{ \"b\" : [ 1 , 2 ] ,\n\t\"a\" : 1 }", true},
		{`{"a":{"y":1,"x":2}}`, `{"a":{"x":2,"y":1}}`, true},
		{`{"a":"<&>"}`, `{"a":"\u003c\u0026\u003e"}`, true},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":1}`, `{"a":1} trailing`, false},
	}
	for _, tt := range tests {
		ba, bb := parseBody("application/json", []byte(tt.a)), parseBody("application/json", []byte(tt.b))
		if got := ba.exact() == bb.exact(); got != tt.equal {
			t.Errorf("%s vs %s: equal = %v, want %v (%q, %q)", tt.a, tt.b, got, tt.equal, ba.exact(), bb.exact())
		}
	}
}

func TestVolatile(t *testing.T) {
	values := []struct {
		v    string
		want bool
	}{
		{"3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8", true},
		{"4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"2025-03-01T12:00:00Z", true},
		{"2025-03-01 12:00:00.123+01:00", true},
		{"Sat, 01 Mar 2025 12:00:00 GMT", true},
		{"1700000000", true},
		{"1700000000123", true},
		{"1700000000.25", true},
		{"2025-03-01", false},
		{"42", false},
		{"9999999999", false},
		{"1234567890123456", true}, // µs since 2009
		{"deadbeefdeadbeef", false},
		{"shoes", false},
		{"ord_7f3a9b21", false},
	}
	for _, tt := range values {
		if got := volatileValue(tt.v); got != tt.want {
			t.Errorf("volatileValue(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
	vol := newVolatility([]string{"X-Session"})
	keys := []struct {
		k    string
		want bool
	}{
		{"ts", true}, {"request_id", true}, {"requestId", true}, {"X-Request-ID", true},
		{"clientTimestamp", true}, {"_", true}, {"__", true}, {"x_session", true},
		{"id", false}, {"q", false}, {"date", false}, {"", false},
	}
	for _, tt := range keys {
		if got := vol.key(tt.k); got != tt.want {
			t.Errorf("key(%q) = %v, want %v", tt.k, got, tt.want)
		}
	}
}

func TestFormBody(t *testing.T) {
	e := rec(1, "POST", "https://api.test/token", "", "tok")
	e.RequestBody = []byte("grant=client&nonce=abc&scope=read")
	e.RequestHeader.Set("Content-Type", "application/x-www-form-urlencoded")
	m := newTestMatcher(t, e)
	u, _ := url.Parse("https://api.test/token")
	q := newRequest("POST", "https", "api.test:443", u, "application/x-www-form-urlencoded", []byte("scope=read&nonce=xyz&grant=client"))
	if en, level := m.match(&q); en == nil || level != Loose {
		t.Fatalf("got %v at %s, want a loose match", en, level)
	}
	q = newRequest("POST", "https", "api.test:443", u, "application/x-www-form-urlencoded", []byte("scope=write&grant=client"))
	if en, _ := m.match(&q); en != nil {
		t.Fatal("scope=write matched")
	}
	if d := m.explain(&q).Differences; !cmp.Equal(d, []string{"form nonce: missing, recorded abc", "form scope: got write, recorded read"}) {
		t.Errorf("differences = %q", d)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	exs := []*snapshots.Exchange{rec(1, "GET", "http://api.test/a", "", "a")}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"on-miss", Config{Exchanges: exs, OnMiss: "ignore"}, `on-miss "ignore"`},
		{"timing", Config{Exchanges: exs, Timing: "fast"}, `timing "fast"`},
		{"unrecorded service", Config{Exchanges: exs, Services: []string{"other.test:80"}}, "service not in the recording: other.test:80 (recorded services: api.test:80)"},
		{"no port", Config{Exchanges: exs, Services: []string{"api.test"}}, `"api.test": want host:port`},
		{"https without CA", Config{Exchanges: []*snapshots.Exchange{rec(1, "GET", "https://api.test/a", "", "a")}}, "a CA is needed"},
		{"https with a nil *ca.CA", Config{CA: (*ca.CA)(nil), Exchanges: []*snapshots.Exchange{rec(1, "GET", "https://api.test/a", "", "a")}}, "a CA is needed"},
		{"match level", Config{Exchanges: exs, Match: Level(7)}, "match level 7"},
		{"bad exchange", Config{Exchanges: []*snapshots.Exchange{{ID: 9, URL: "/relative", Method: "GET"}}}, "exchange 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestMatchLoosest(t *testing.T) {
	exs := []*snapshots.Exchange{rec(1, "GET", "https://api.test/items/1?a=1&b=2", "", "one")}
	tests := []struct {
		loosest Level
		url     string
		want    Level // 0: a miss
	}{
		{Exact, "https://api.test/items/1?a=1&b=2", Exact},
		{Exact, "https://api.test/items/1?b=2&a=1", 0},
		{Loose, "https://api.test/items/1?b=2&a=1", Loose},
		{Loose, "https://api.test/items/2?a=1&b=2", 0},
		{Template, "https://api.test/items/2?a=1&b=2", Template},
	}
	for _, tt := range tests {
		m := newTestMatcher(t, exs...)
		m.loosest = tt.loosest
		q := ask(t, "GET", tt.url, "")
		if _, got := m.match(&q); got != tt.want {
			t.Errorf("loosest %s, %s: matched at %s, want %s", tt.loosest, tt.url, got, tt.want)
		}
	}
	for _, s := range []string{"exact", "loose", "template"} {
		if l, err := ParseLevel(s); err != nil || l.String() != s {
			t.Errorf("ParseLevel(%q) = %v, %v", s, l, err)
		}
	}
	if _, err := ParseLevel("fuzzy"); err == nil {
		t.Error("ParseLevel accepted fuzzy")
	}
}
