package replayer

import (
	"net/http"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func ex(method, url string, reqH http.Header, reqBody string, status int, respH http.Header, respBody string) *snapshots.Exchange {
	return &snapshots.Exchange{Direction: snapshots.Inbound, Method: method, URL: "http://svc" + url, RequestHeader: reqH,
		RequestBody: []byte(reqBody), Status: status, ResponseHeader: respH, ResponseBody: []byte(respBody)}
}

func onConn(conn int64, e *snapshots.Exchange) *snapshots.Exchange {
	e.ClientConn = conn
	return e
}

// linksOf returns the links found in exs, as "from → to" sorted.
func linksOf(sessionKey string, exs ...*snapshots.Exchange) []string {
	d := newLinkDetector(sessionKey)
	for i, e := range exs {
		d.add(i, e)
	}
	set := d.done(len(exs))
	if set == nil {
		return nil
	}
	var out []string
	for _, l := range set.links {
		out = append(out, l.from+" → "+l.to)
	}
	sort.Strings(out)
	return out
}

func TestLinksFoundFromTheRecording(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json"}}
	created := ex("POST", "/orders", nil, `{"item":"book"}`, 201, http.Header{"Location": {"/orders/ord_8f3a"}},
		`{"order":{"id":"ord_8f3a","status":"active","count":2}}`)
	for _, c := range []struct {
		name string
		key  string
		exs  []*snapshots.Exchange
		want []string
	}{
		{"path, from the body before Location", "", []*snapshots.Exchange{created, ex("GET", "/orders/ord_8f3a", nil, "", 200, json, `{}`)},
			[]string{"$.order.id of POST /orders → path of GET /orders/{id}"}},
		{"query, header and JSON body", "", []*snapshots.Exchange{created,
			ex("GET", "/search?order=ord_8f3a", http.Header{"X-Order": {"ord_8f3a"}}, "", 200, json, `{}`),
			ex("POST", "/refunds", nil, `{"order":"ord_8f3a"}`, 201, json, `{}`)},
			[]string{"$.order.id of POST /orders → body $.order of POST /refunds", "$.order.id of POST /orders → header X-Order of GET /search",
				"$.order.id of POST /orders → query order of GET /search"}},
		{"words and small numbers are no ids", "", []*snapshots.Exchange{created,
			ex("GET", "/orders?status=active&count=2", nil, "", 200, json, `{}`)}, nil},
		{"a value the client sent first is not the server's", "", []*snapshots.Exchange{
			ex("PUT", "/orders/ord_8f3a", nil, "", 200, json, `{"id":"ord_8f3a"}`),
			ex("GET", "/orders/ord_8f3a", nil, "", 200, json, `{}`)}, nil},
		{"another client's value, told apart by the session key", "X-Client", []*snapshots.Exchange{
			ex("POST", "/orders", http.Header{"X-Client": {"a"}}, "", 201, json, `{"id":"ord_8f3a"}`),
			ex("GET", "/orders/ord_8f3a", http.Header{"X-Client": {"b"}}, "", 200, json, `{}`)}, nil},
		{"the same client, told apart by the session key", "X-Client", []*snapshots.Exchange{
			ex("POST", "/orders", http.Header{"X-Client": {"a"}}, "", 201, json, `{"id":"ord_8f3a"}`),
			ex("GET", "/orders/ord_8f3a", http.Header{"X-Client": {"a"}}, "", 200, json, `{}`)},
			[]string{"$.id of POST /orders → path of GET /orders/{id}"}},
		{"another connection's value, when its own answers never held it", "", []*snapshots.Exchange{
			onConn(1, ex("POST", "/orders", nil, "", 201, json, `{"id":"ord_8f3a"}`)),
			onConn(2, ex("GET", "/orders/ord_8f3a", nil, "", 200, json, `{}`))},
			[]string{"$.id of POST /orders → path of GET /orders/{id}"}},
		{"a failed answer generates nothing", "", []*snapshots.Exchange{
			ex("POST", "/orders", nil, "", 500, json, `{"id":"ord_8f3a"}`),
			ex("GET", "/orders/ord_8f3a", nil, "", 404, json, `{}`)}, nil},
		{"cookies, by name and redacted", "", []*snapshots.Exchange{
			ex("POST", "/login", nil, "", 204, http.Header{"Set-Cookie": {"sid=abc123; Path=/"}}, ""),
			ex("GET", "/me", http.Header{"Cookie": {"sid=abc123; theme=dark"}}, "", 200, json, `{}`),
			ex("POST", "/login2", nil, "", 204, http.Header{"Set-Cookie": {Redacted}}, ""),
			ex("GET", "/me2", http.Header{"Cookie": {Redacted}}, "", 200, json, `{}`)},
			[]string{"Set-Cookie of POST /login2 → cookies of GET /me2", "Set-Cookie sid of POST /login → cookie sid of GET /me"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, linksOf(c.key, c.exs...)); diff != "" {
				t.Errorf("links (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLinksStayWithinTheirConnection: two connections whose answers held
// the same value and set the same cookie: each later request takes them
// from its own connection's answers.
func TestLinksStayWithinTheirConnection(t *testing.T) {
	json := http.Header{"Content-Type": {"application/json"}}
	login := http.Header{"Set-Cookie": {"sid=" + Redacted}}
	exs := []*snapshots.Exchange{
		onConn(1, ex("POST", "/login", nil, "", 204, login, "")),
		onConn(1, ex("POST", "/orders", http.Header{"Cookie": {Redacted}}, "", 201, json, `{"id":"ord_0001"}`)),
		onConn(2, ex("POST", "/login", nil, "", 204, login, "")),
		onConn(2, ex("POST", "/orders", http.Header{"Cookie": {Redacted}}, "", 201, json, `{"id":"ord_0001"}`)),
		onConn(1, ex("GET", "/orders/ord_0001", http.Header{"Cookie": {Redacted}}, "", 200, json, `{}`)),
		onConn(2, ex("GET", "/orders/ord_0001", http.Header{"Cookie": {Redacted}}, "", 200, json, `{}`)),
	}
	d := newLinkDetector("")
	for i, e := range exs {
		d.add(i, e)
	}
	set := d.done(len(exs))
	if set == nil {
		t.Fatal("no links")
	}
	for pos, conn := range map[int]int64{1: 1, 3: 2, 4: 1, 5: 2} {
		for _, u := range set.uses[pos] {
			if exs[u.src].ClientConn != conn {
				t.Errorf("request %d (connection %d) takes %s from request %d of connection %d", pos, conn, u.from, u.src, exs[u.src].ClientConn)
			}
		}
		if len(set.uses[pos]) == 0 {
			t.Errorf("request %d takes nothing", pos)
		}
	}
	if set.groups != 2 || set.group[0] == set.group[2] {
		t.Errorf("groups %v; want one per connection", set.group)
	}
}
