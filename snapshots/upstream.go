package snapshots

import (
	"net"
	"time"
)

// UpstreamCount is how many calls to one endpoint of a mocked service a
// replayed request caused (Result.Upstream).
type UpstreamCount struct {
	// Service names the service as a request reaches it: "catalog.test",
	// with ":port" when the port is not its scheme's default
	// (UpstreamService).
	Service string
	// Endpoint is the call's method and path template, e.g.
	// "GET /products/{id}".
	Endpoint string
	// Count is the number of calls.
	Count int
	// Duration is their total time in the mock, from the call's arrival to
	// its answer (the recorded duration with --mock-timing recorded).
	Duration time.Duration
	// Misses is the number of those calls the recording had no answer for.
	Misses int
}

// Name is "service endpoint", e.g. "catalog.test GET /products/{id}".
func (c UpstreamCount) Name() string { return c.Service + " " + c.Endpoint }

// UpstreamService names a service (host:port) for UpstreamCount.Service:
// the host alone when port is the default of scheme ("http" or "https").
func UpstreamService(hostport, scheme string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	if scheme == "https" && port == "443" || scheme != "https" && port == "80" {
		if net.ParseIP(host) != nil && net.ParseIP(host).To4() == nil {
			return "[" + host + "]"
		}
		return host
	}
	return hostport
}

// AddUpstream adds a call to counts: to the entry of its service and
// endpoint, or a new one.
func AddUpstream(counts []UpstreamCount, c UpstreamCount) []UpstreamCount {
	for i := range counts {
		if counts[i].Service == c.Service && counts[i].Endpoint == c.Endpoint {
			counts[i].Count += c.Count
			counts[i].Duration += c.Duration
			counts[i].Misses += c.Misses
			return counts
		}
	}
	return append(counts, c)
}

// UpstreamCalls is the number of calls to mocked services attributed to
// the request.
func (r *Result) UpstreamCalls() int {
	n := 0
	for _, c := range r.Upstream {
		n += c.Count
	}
	return n
}
