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
	"github.com/replaykit/replay/internal/pgtest"
)

func TestParseDelay(t *testing.T) {
	tests := []struct {
		in      string
		want    map[string]time.Duration
		wantErr string
	}{
		{"", nil, ""},
		{"GET /orders/{id}/status=50ms", map[string]time.Duration{"GET /orders/{id}/status": 50 * time.Millisecond}, ""},
		{" GET  /orders = 1s ,POST /orders=0s", map[string]time.Duration{"GET /orders": time.Second, "POST /orders": 0}, ""},
		{"GET /orders/{id}/status", nil, "want ROUTE=DURATION"},
		{"GET /orders/1/status=5ms", nil, `unknown route "GET /orders/1/status"`},
		{"GET /orders=-5ms", nil, "want a duration of zero or more"},
		{"GET /orders=5", nil, "want a duration of zero or more"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := app.ParseDelay(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseDelay(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("ParseDelay(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			for k, v := range tt.want {
				if d, ok := got[k]; !ok || d != v {
					t.Errorf("ParseDelay(%q)[%q] = %v, want %v", tt.in, k, d, v)
				}
			}
		})
	}
}

// TestDelay delays one route: it answers no sooner than its delay, and the
// routes that share its prefix are not held up.
func TestDelay(t *testing.T) {
	db := pgtest.Database(t)
	if _, err := app.New(context.Background(), app.Config{DatabaseURL: db, Delay: map[string]time.Duration{"GET /orders/{id}/stat": time.Second}}); err == nil ||
		!strings.Contains(err.Error(), `delay: unknown route "GET /orders/{id}/stat"`) {
		t.Errorf("New with a delay on an unknown route = %v, want an error naming it", err)
	}

	// A delay of an hour: the delayed route never answers within the test,
	// the others answer at once.
	_, base := startApp(t, app.Config{DatabaseURL: db, Delay: map[string]time.Duration{app.RouteGetStatus: time.Hour}})
	ids, err := app.Seed(context.Background(), base, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(ids[0], 10)
	for _, path := range []string{"/orders", "/orders/" + id} {
		if r := call(t, "GET", base+path, nil); r.status != http.StatusOK {
			t.Errorf("GET %s = %d, want 200 (not delayed)", path, r.status)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/orders/"+id+"/status", nil)
	if resp, err := http.DefaultClient.Do(req); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("GET /orders/%s/status with an hour's delay = %v, want no answer before the client gives up", id, err)
	}

	// A short delay: the answer comes, no sooner than the delay.
	_, base = startApp(t, app.Config{DatabaseURL: db, Delay: map[string]time.Duration{app.RouteGetStatus: 50 * time.Millisecond}})
	start := time.Now()
	r := call(t, "GET", base+"/orders/"+id+"/status", nil)
	if took := time.Since(start); r.status != http.StatusOK || took < 50*time.Millisecond {
		t.Errorf("GET /orders/%s/status = %d after %v, want 200 after at least 50ms", id, r.status, took)
	}
}
