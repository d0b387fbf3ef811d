package redact

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/snapshots"
)

// benchExchange is a typical recorded API call (as snapshots' benchmark):
// about 1.5 KB of headers and JSON bodies; secret adds a bearer token, a
// ?token= and a JSON password.
func benchExchange(secret bool) *snapshots.Exchange {
	reqBody := bytes.Repeat([]byte(`{"sku":"A-1","qty":2},`), 12)
	respBody := bytes.Repeat([]byte(`{"id":12345,"status":"shipped","total":"19.99"},`), 18)
	e := &snapshots.Exchange{
		Method: "POST", URL: "http://127.0.0.1:8080/orders/42/items?expand=1",
		RequestHeader: http.Header{
			"Content-Type": {"application/json"}, "User-Agent": {"Go-http-client/1.1"},
			"Accept-Encoding": {"gzip"}, "Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		},
		RequestBody: reqBody, RequestBodySize: int64(len(reqBody)), Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"application/json"}, "Date": {"Mon, 02 Jan 2006 15:04:05 GMT"}},
		ResponseBody:   respBody, ResponseBodySize: int64(len(respBody)),
	}
	if secret {
		e.URL += "&token=abc"
		e.RequestHeader.Set("Authorization", "Bearer abc")
		e.RequestBody = append([]byte(`{"password":"abc","items":[`), e.RequestBody...)
	}
	return e
}

// BenchmarkRedact measures the redaction of one exchange, as the snapshot
// writer applies it to every exchange recorded.
func BenchmarkRedact(b *testing.B) {
	r := New(Config{})
	for _, secret := range []bool{false, true} {
		name := "nothing secret"
		if secret {
			name = "secrets"
		}
		b.Run(name, func(b *testing.B) {
			tmpl := benchExchange(secret)
			b.ReportAllocs()
			cpu0 := cputime.Self()
			for b.Loop() {
				e := *tmpl
				r.Redact(&e)
			}
			// CPU time per exchange: steadier than ns/op on a busy machine.
			b.ReportMetric(float64((cputime.Self()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
