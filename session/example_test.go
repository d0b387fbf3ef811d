package session_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/snapshots"
)

// A comparison from Go, without the CLI: two builds of a service (here two
// servers in this process; a Cmd side would start a real build), the same
// recorded requests replayed to both in interleaved slices, and the
// verdict of each endpoint. The candidate's GET /orders is 20 ms slower.
func ExampleCompare() {
	baseline := httptest.NewServer(orders(0))
	defer baseline.Close()
	candidate := httptest.NewServer(orders(20 * time.Millisecond))
	defer candidate.Close()

	dir, err := os.MkdirTemp("", "replay-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	res, err := session.Compare(context.Background(), session.CompareConfig{
		Config: session.Config{
			// Usually read from a snapshot (snapshots.Open, Exchanges).
			Inbound: []*snapshots.Exchange{
				{ID: 1, Direction: snapshots.Inbound, Method: "GET", URL: "http://orders.local/orders", Status: 200, Endpoint: "GET /orders"},
				{ID: 2, Direction: snapshots.Inbound, Method: "GET", URL: "http://orders.local/orders/7", Status: 200, Endpoint: "GET /orders/{id}"},
			},
		},
		Baseline:  session.SideConfig{Name: "baseline", URL: baseline.URL},
		Candidate: session.SideConfig{Name: "candidate", URL: candidate.URL},
		Dir:       dir,
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 2, Duration: 2 * time.Second}},
	})
	if err != nil {
		log.Fatal(err)
	}
	c := res.Report.Comparison
	fmt.Println("GET /orders:", c.Endpoint("GET /orders").Verdict)
	fmt.Println("overall:", c.Verdict)
	// Output:
	// GET /orders: regression
	// overall: regression
}

// orders serves GET /orders after delay, and GET /orders/{id} at once.
func orders(delay time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		fmt.Fprint(w, `[{"id":7}]`)
	})
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"id":%s}`, r.PathValue("id"))
	})
	return mux
}
