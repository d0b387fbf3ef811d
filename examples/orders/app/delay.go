package app

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Route patterns of the service, as Config.Delay and APP_DELAY name them.
const (
	RouteCreateOrder = "POST /orders"
	RouteListOrders  = "GET /orders"
	RouteGetOrder    = "GET /orders/{id}"
	RouteGetStatus   = "GET /orders/{id}/status"
	RouteCatalog     = "GET /catalog"
)

// Routes returns the service's route patterns.
func Routes() []string {
	return []string{RouteCreateOrder, RouteListOrders, RouteGetOrder, RouteGetStatus, RouteCatalog}
}

func knownRoute(pattern string) bool {
	for _, r := range Routes() {
		if r == pattern {
			return true
		}
	}
	return false
}

// ParseDelay parses APP_DELAY: entries "ROUTE=DURATION" separated by commas,
// e.g. "GET /orders/{id}/status=50ms" or "GET /orders=5ms,POST /orders=1s".
// ROUTE is one of Routes (white space around it is ignored); DURATION is
// a Go duration of zero or more. An empty string gives nil.
func ParseDelay(s string) (map[string]time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	delay := map[string]time.Duration{}
	for entry := range strings.SplitSeq(s, ",") {
		i := strings.LastIndex(entry, "=")
		if i < 0 {
			return nil, fmt.Errorf("%q: want ROUTE=DURATION, e.g. 'GET /orders/{id}/status=50ms'", entry)
		}
		route := strings.Join(strings.Fields(entry[:i]), " ")
		if !knownRoute(route) {
			return nil, fmt.Errorf("%q: unknown route %q (want one of %s)", entry, route, strings.Join(Routes(), ", "))
		}
		d, err := time.ParseDuration(strings.TrimSpace(entry[i+1:]))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("%q: want a duration of zero or more after '=', e.g. 50ms", entry)
		}
		delay[route] = d
	}
	return delay, nil
}

// delayed waits d before h runs (a slowdown outside the database); a request
// whose client gives up meanwhile gets no answer.
func delayed(d time.Duration, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		h(w, r)
	}
}
