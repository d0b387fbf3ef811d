package app_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/examples/orders/app"
	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/internal/pgtest"
)

func TestParseBurn(t *testing.T) {
	got, err := app.ParseBurn(" GET /orders/{id} = 40us ,GET /orders=0s")
	if err != nil || len(got) != 2 || got[app.RouteGetOrder] != 40*time.Microsecond || got[app.RouteListOrders] != 0 {
		t.Errorf("ParseBurn = %v, %v; want GET /orders/{id} 40µs, GET /orders 0", got, err)
	}
	if got, err := app.ParseBurn(""); got != nil || err != nil {
		t.Errorf("ParseBurn(\"\") = %v, %v; want nil, nil", got, err)
	}
	for in, want := range map[string]string{
		"GET /orders/{id}":       "want ROUTE=DURATION",
		"GET /orders/1=40us":     `unknown route "GET /orders/1"`,
		"GET /orders/{id}=-40us": "want a duration of zero or more",
		"GET /orders/{id}=40":    "want a duration of zero or more",
	} {
		if _, err := app.ParseBurn(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBurn(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

// TestBurn burns CPU on one route: it answers no sooner than its burn, the
// process spends at least that much CPU time on it, and the other routes
// are not held up.
func TestBurn(t *testing.T) {
	db := pgtest.Database(t)
	if _, err := app.New(context.Background(), app.Config{DatabaseURL: db, Burn: map[string]time.Duration{"GET /orders/{i}": time.Second}}); err == nil ||
		!strings.Contains(err.Error(), `burn: unknown route "GET /orders/{i}"`) {
		t.Errorf("New with a burn on an unknown route = %v, want an error naming it", err)
	}

	// A burn of an hour: the route never answers within the test (and
	// stops burning once its client gives up), the others answer at once.
	_, base := startApp(t, app.Config{DatabaseURL: db, Burn: map[string]time.Duration{app.RouteGetOrder: time.Hour}})
	ids, err := app.Seed(context.Background(), base, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(ids[0], 10)
	for _, path := range []string{"/orders", "/orders/" + id + "/status"} {
		if r := call(t, "GET", base+path, nil); r.status != http.StatusOK {
			t.Errorf("GET %s = %d, want 200 (no burn)", path, r.status)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/orders/"+id, nil)
	if resp, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("GET /orders/%s with an hour's burn = %v, want no answer before the client gives up", id, err)
	}

	// A burn of 100ms: the answer comes no sooner, and the process spent
	// at least that much CPU time on it (a busy loop, not a wait).
	const d = 100 * time.Millisecond
	_, base = startApp(t, app.Config{DatabaseURL: db, Burn: map[string]time.Duration{app.RouteGetOrder: d}})
	cpu0, start := cputime.Self(), time.Now()
	r := call(t, "GET", base+"/orders/"+id, nil)
	took, cpu := time.Since(start), cputime.Self()-cpu0
	if r.status != http.StatusOK || took < d || cpu < d {
		t.Errorf("GET /orders/%s = %d after %v, %v of CPU time; want 200 after at least %v of both", id, r.status, took, cpu, d)
	}
	// The other routes spend no such time: twenty of them take less
	// than the burn of one.
	cpu0 = cputime.Self()
	for range 20 {
		if r := call(t, "GET", base+"/orders/"+id+"/status", nil); r.status != http.StatusOK {
			t.Fatalf("GET /orders/%s/status = %d, want 200", id, r.status)
		}
	}
	if cpu := cputime.Self() - cpu0; cpu >= d {
		t.Errorf("20 requests to GET /orders/{id}/status spent %v of CPU time, want less than one burn of %v", cpu, d)
	}
}
