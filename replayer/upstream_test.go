package replayer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/snapshots"
)

// upstreamApp is an app whose every request calls the catalog twice through
// a mock of it (as a base URL), passing the request's traceparent on when
// propagate is set.
func upstreamApp(t *testing.T, propagate bool) (target string, m *mock.Server) {
	t.Helper()
	m, err := mock.New(mock.Config{Exchanges: []*snapshots.Exchange{{ID: 100, Direction: snapshots.Outbound, Method: "GET",
		URL: "http://catalog.test/products/1001", Status: 200, ResponseBody: []byte(`{"sku":"1001"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.ServiceHandler("catalog.test:80")
	if err != nil {
		t.Fatal(err)
	}
	catalog := httptest.NewServer(h)
	t.Cleanup(catalog.Close)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // requests of several users overlap
		for _, id := range []string{"1001", "1002"} {
			req, _ := http.NewRequestWithContext(r.Context(), "GET", catalog.URL+"/products/"+id, nil)
			if propagate {
				req.Header.Set("Traceparent", r.Header.Get("Traceparent"))
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}))
	t.Cleanup(app.Close)
	return app.URL, m
}

// TestUpstreamCounted: each replayed request gets the calls the app made to
// mocked services for it: all of them when the app passes the traceparent
// on, whatever the concurrency; without it, only the requests whose calls
// could all be attributed count, and those counts are right.
func TestUpstreamCounted(t *testing.T) {
	for _, tt := range []struct {
		name      string
		propagate bool
		vus       int
	}{{"traceparent", true, 4}, {"alone", false, 1}, {"overlapping", false, 4}} {
		t.Run(tt.name, func(t *testing.T) {
			target, m := upstreamApp(t, tt.propagate)
			r := newReplayer(t, Config{Target: target, Exchanges: exchanges(8), Upstream: m})
			var s sink
			if _, err := r.Run(context.Background(), LoadPlan{VUs: tt.vus, Iterations: 5}, &s); err != nil {
				t.Fatal(err)
			}
			counted := 0
			for _, res := range s.all() {
				if res.Status != 200 {
					t.Fatalf("status %d: %s", res.Status, res.Error)
				}
				if !res.UpstreamCounted {
					continue
				}
				counted++
				if len(res.Upstream) != 1 || res.Upstream[0].Name() != "catalog.test GET /products/{id}" || res.Upstream[0].Count != 2 {
					t.Errorf("request %d: calls %+v, want 2 of catalog.test GET /products/{id}", res.Seq, res.Upstream)
				}
			}
			switch {
			case tt.name != "overlapping" && counted != 40:
				t.Errorf("%d of 40 requests counted, want all", counted)
			case tt.name == "overlapping" && counted == 40:
				t.Errorf("every request counted although 4 users overlapped and no traceparent was passed on")
			}
			t.Logf("%d of 40 requests counted", counted)
		})
	}
}
