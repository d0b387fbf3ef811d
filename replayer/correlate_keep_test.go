package replayer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/replaykit/replay/snapshots"
)

// A value taken from a list is sent as recorded while the live list still
// holds it, in whatever order the build lists it; a list of new values
// gives the one at the recorded index. A build that reverses the items of
// its answers must not make the next request buy another item.
func TestCorrelationKeepsAValueTheLiveListStillHolds(t *testing.T) {
	for _, tt := range []struct {
		name, list, want string
	}{
		{"reordered", `{"items":[{"sku":"SKU-1002"},{"sku":"SKU-1001"}]}`, `{"sku":"SKU-1002"}`},
		{"generated anew", `{"items":[{"sku":"NEW-0001"},{"sku":"NEW-0002"}]}`, `{"sku":"NEW-0002"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var bought []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, tt.list)
					return
				}
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				bought = append(bought, string(b))
				mu.Unlock()
				w.WriteHeader(http.StatusCreated)
			}))
			defer srv.Close()
			exs := []*snapshots.Exchange{
				{ID: 1, Direction: snapshots.Inbound, Method: "GET", URL: "http://svc/list", Status: 200,
					ResponseHeader: http.Header{"Content-Type": {"application/json"}},
					ResponseBody:   []byte(`{"items":[{"sku":"SKU-1001"},{"sku":"SKU-1002"}]}`)},
				{ID: 2, Direction: snapshots.Inbound, Method: "POST", URL: "http://svc/buy", Status: 201,
					RequestHeader: http.Header{"Content-Type": {"application/json"}}, RequestBody: []byte(`{"sku":"SKU-1002"}`)},
			}
			r := newReplayer(t, Config{Target: srv.URL, Exchanges: exs, State: StateConfig{Correlate: true}})
			var s statusSink
			if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 2}, &s); err != nil {
				t.Fatal(err)
			}
			if st := r.State(); st == nil || len(st.Links) == 0 {
				t.Fatalf("state %+v; want the link from the list to the purchase", st)
			}
			if want := []string{tt.want, tt.want}; !slices.Equal(bought, want) {
				t.Errorf("bought %q, want %q", bought, want)
			}
		})
	}
}
