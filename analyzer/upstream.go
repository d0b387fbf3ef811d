package analyzer

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// UpstreamStats describes the calls to mocked services attributed to an
// endpoint's requests (snapshots.Result.Upstream), like SQLStats the
// statements: from the explain phase when there was one (every call
// attributed exactly), else from the load requests whose calls were all
// attributed (UpstreamCounted).
type UpstreamStats struct {
	// Source is SQLSourceExplain or SQLSourceLoad; "" when no request had
	// its calls counted (no mock).
	Source string
	// Requests counts the requests the figures come from.
	Requests int64
	// Calls counts calls in total.
	Calls int64
	// PerRequest is calls per request.
	PerRequest float64
	// TimePerRequest is the time the calls took in the mock per request, in
	// milliseconds (near zero unless the mock replays recorded timing).
	TimePerRequest float64
	// Misses counts the calls the recording had no answer for.
	Misses int64
	// Endpoints break the figures down per service and endpoint, most
	// calls per request first.
	Endpoints []UpstreamEndpointStats
}

// Counted reports whether any request had its calls counted.
func (s *UpstreamStats) Counted() bool { return s.Requests > 0 }

// Endpoint returns the figures of the named upstream endpoint
// ("catalog.test GET /products/{id}"), or nil.
func (s *UpstreamStats) Endpoint(name string) *UpstreamEndpointStats {
	for i := range s.Endpoints {
		if s.Endpoints[i].Name() == name {
			return &s.Endpoints[i]
		}
	}
	return nil
}

// UpstreamEndpointStats describes the calls to one endpoint of a mocked
// service within an UpstreamStats.
type UpstreamEndpointStats struct {
	// Service is the service as called, e.g. "catalog.test"; Endpoint the
	// method and path template, e.g. "GET /products/{id}".
	Service, Endpoint string
	// Calls is the number of calls in total.
	Calls int64
	// PerRequest is calls per request (over all counted requests).
	PerRequest float64
	// MinPerRequest and MaxPerRequest bound the calls of one request (the
	// minimum zero when some request made none).
	MinPerRequest, MaxPerRequest int
	// TimePerRequest is their time per request, and PerCall the mean time
	// of one call, in milliseconds.
	TimePerRequest, PerCall float64
	// Misses counts the calls the recording had no answer for.
	Misses int64
}

// Name is "service endpoint", e.g. "catalog.test GET /products/{id}".
func (u UpstreamEndpointStats) Name() string { return u.Service + " " + u.Endpoint }

// upstreamPhases accumulates an endpoint's upstream calls per phase.
type upstreamPhases struct{ load, explain upstreamAcc }

// add counts r's calls when they were counted; w is the number of requests
// it stands for.
func (p *upstreamPhases) add(r *snapshots.Result, w float64) {
	if !r.UpstreamCounted {
		return
	}
	if r.Phase == snapshots.PhaseExplain {
		p.explain.add(r.Upstream, w)
		return
	}
	p.load.add(r.Upstream, 1)
}

func (p *upstreamPhases) merge(o *upstreamPhases) {
	p.load.merge(&o.load)
	p.explain.merge(&o.explain)
}

// stats is the preferred view: the explain phase's, else the load's.
func (p *upstreamPhases) stats() UpstreamStats {
	if p.explain.requests > 0 {
		return p.explain.stats(SQLSourceExplain)
	}
	return p.load.stats(SQLSourceLoad)
}

// maxUpstreamEndpoints bounds the upstream endpoints tracked per endpoint
// and phase; the rest are lumped together.
const maxUpstreamEndpoints = 1000

// otherUpstream is where the calls beyond maxUpstreamEndpoints go.
var otherUpstream = upstreamKey{"(other)", "(other calls)"}

type upstreamKey struct{ service, endpoint string }

// upstreamAcc accumulates the calls of the requests of one phase.
type upstreamAcc struct {
	requests int64
	weight   float64
	eps      map[upstreamKey]*upAcc
}

// upAcc accumulates one upstream endpoint.
type upAcc struct {
	calls, misses int64
	wcalls, wdur  float64 // weighted by the requests' weights; wdur in ns
	dur           time.Duration
	with          int64
	lo, hi        int
}

func (a *upstreamAcc) add(counts []snapshots.UpstreamCount, w float64) {
	a.requests++
	a.weight += w
	if a.eps == nil {
		a.eps = map[upstreamKey]*upAcc{}
	}
	for _, c := range counts {
		if c.Count <= 0 {
			continue
		}
		k := upstreamKey{c.Service, c.Endpoint}
		u := a.eps[k]
		if u == nil {
			if len(a.eps) >= maxUpstreamEndpoints {
				k = otherUpstream
				u = a.eps[k]
			}
			if u == nil {
				u = &upAcc{lo: math.MaxInt}
				a.eps[k] = u
			}
		}
		u.calls += int64(c.Count)
		u.misses += int64(c.Misses)
		u.dur += c.Duration
		u.wcalls += w * float64(c.Count)
		u.wdur += w * float64(c.Duration)
		u.with++
		u.lo, u.hi = min(u.lo, c.Count), max(u.hi, c.Count)
	}
}

func (a *upstreamAcc) merge(o *upstreamAcc) {
	a.requests += o.requests
	a.weight += o.weight
	if len(o.eps) > 0 && a.eps == nil {
		a.eps = map[upstreamKey]*upAcc{}
	}
	for k, ou := range o.eps {
		u := a.eps[k]
		if u == nil {
			u = &upAcc{lo: ou.lo, hi: ou.hi}
			a.eps[k] = u
		}
		u.calls += ou.calls
		u.misses += ou.misses
		u.dur += ou.dur
		u.wcalls += ou.wcalls
		u.wdur += ou.wdur
		u.with += ou.with
		u.lo, u.hi = min(u.lo, ou.lo), max(u.hi, ou.hi)
	}
}

func (a *upstreamAcc) stats(source string) UpstreamStats {
	if a.requests == 0 {
		return UpstreamStats{}
	}
	s := UpstreamStats{Source: source, Requests: a.requests}
	n := a.weight
	if n <= 0 {
		n = float64(a.requests)
	}
	var wcalls, wdur float64
	for k, u := range a.eps {
		es := UpstreamEndpointStats{Service: k.service, Endpoint: k.endpoint, Calls: u.calls, Misses: u.misses,
			PerRequest: u.wcalls / n, MaxPerRequest: u.hi, TimePerRequest: u.wdur / float64(time.Millisecond) / n}
		if u.calls > 0 {
			es.PerCall = durMs(u.dur) / float64(u.calls)
		}
		if u.with == a.requests {
			es.MinPerRequest = u.lo
		}
		s.Calls += u.calls
		s.Misses += u.misses
		wcalls += u.wcalls
		wdur += u.wdur
		s.Endpoints = append(s.Endpoints, es)
	}
	s.PerRequest = wcalls / n
	s.TimePerRequest = wdur / float64(time.Millisecond) / n
	slices.SortFunc(s.Endpoints, func(x, y UpstreamEndpointStats) int {
		if c := cmp.Compare(y.PerRequest, x.PerRequest); c != 0 {
			return c
		}
		return cmp.Compare(x.Name(), y.Name())
	})
	return s
}
