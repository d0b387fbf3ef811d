package mock

import (
	"net/url"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// FuzzRequest feeds arbitrary queries and bodies through canonicalisation,
// matching and the miss explanation: none of it may panic, and a recorded
// request always matches a request identical to it.
func FuzzRequest(f *testing.F) {
	f.Add("x=1&y=2", `{"a":1,"b":[true,null,"s"]}`, "application/json")
	f.Add("ts=1700000000&_=1&q=%zz", `{"request_id":"3f2a9c1e-8b7d-4e6f-a5b4-c3d2e1f0a9b8"}`, "")
	f.Add("a=%41&a=b&=&&", "a=1&nonce=2&%", "application/x-www-form-urlencoded")
	f.Add(";;==", `[{"":{"\u0000":1e999}}]`, "application/json; charset=utf-8")
	f.Add("", "\xff\xfe not json {", "text/plain")
	f.Add("k=2025-03-01T12:00:00Z", `"Sat, 01 Mar 2025 12:00:00 GMT"`, "")
	vol := newVolatility([]string{"session"})
	f.Fuzz(func(t *testing.T, query, body, contentType string) {
		u := &url.URL{Scheme: "https", Host: "api.test", Path: "/p/42", RawQuery: query}
		e := &snapshots.Exchange{
			ID: 1, Direction: snapshots.Outbound, Protocol: "https", Service: "api.test:443",
			Method: "POST", URL: u.String(), RequestBody: []byte(body),
			RequestHeader: map[string][]string{"Content-Type": {contentType}},
		}
		m, _, err := newMatcher([]*snapshots.Exchange{e}, vol, nil)
		if err != nil {
			return // a URL that does not parse back is refused, not a panic
		}
		// The request as the recorded URL reads back (a query holding '#'
		// does not survive the round trip).
		back, err := url.Parse(e.URL)
		if err != nil {
			t.Fatalf("recorded URL %q accepted by newMatcher but not url.Parse: %v", e.URL, err)
		}
		same := newRequest("POST", "https", "api.test:443", back, contentType, []byte(body))
		if en, _, _ := m.match(&same); en == nil {
			t.Fatalf("identical request missed: %v", m.explain(&same))
		}
		other := newRequest("POST", "https", "api.test:443", &url.URL{Path: "/p/43", RawQuery: query + "&z"}, contentType, []byte(body+"x"))
		m.match(&other)
		me := m.explain(&other)
		_ = me.Error()
		_ = differences(&other, &same)
		_ = similarity(&other, &same, vol)
		_ = same.String()
	})
}
