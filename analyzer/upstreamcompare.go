package analyzer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Causes from the calls to mocked services (EndpointComparison.Cause).
const (
	CauseUpstreamNPlusOne = "upstream-n+1" // one upstream endpoint called per item of a list: an HTTP N+1
	CauseUpstream         = "upstream"     // more (or fewer, or slower) calls to mocked services per request
)

// UpstreamChange compares the calls per request to one endpoint of a
// mocked service (each side's preferred source, UpstreamStats).
type UpstreamChange struct {
	// Service and Endpoint name the upstream endpoint, e.g. "catalog.test"
	// and "GET /products/{id}".
	Service, Endpoint string
	// BaselinePerRequest and CandidatePerRequest are calls per request.
	BaselinePerRequest, CandidatePerRequest float64
	// BaselineTimePerRequest and CandidateTimePerRequest are the calls'
	// time in the mock per request, in milliseconds.
	BaselineTimePerRequest, CandidateTimePerRequest float64
	// CandidateMin and CandidateMax bound the candidate's calls in one
	// request (the minimum zero when some request made none).
	CandidateMin, CandidateMax int
}

// Name is "service endpoint", e.g. "catalog.test GET /products/{id}".
func (u UpstreamChange) Name() string { return u.Service + " " + u.Endpoint }

// Delta is the change in calls per request.
func (u UpstreamChange) Delta() float64 { return u.CandidatePerRequest - u.BaselinePerRequest }

// compareUpstream sets e's upstream changes and verdict.
func compareUpstream(e *EndpointComparison, o CompareOptions) {
	b, k := &e.Baseline.Upstream, &e.Candidate.Upstream
	if !b.Counted() || !k.Counted() {
		return
	}
	e.Upstream = upstreamChanges(b, k)
	e.UpstreamExact = b.Source == SQLSourceExplain && k.Source == SQLSourceExplain
	bp, kp := b.PerRequest, k.PerRequest
	d := kp - bp
	switch {
	case d >= o.MinUpstreamIncrease && (e.UpstreamExact || kp >= 1.5*bp):
		e.UpstreamVerdict = Regression
	case -d >= o.MinUpstreamIncrease && (e.UpstreamExact || bp >= 1.5*kp):
		e.UpstreamVerdict = Improvement
	default:
		e.UpstreamVerdict = Unchanged
	}
}

// upstreamChanges compares calls per request by upstream endpoint, largest
// absolute change first, then most calls.
func upstreamChanges(b, k *UpstreamStats) []UpstreamChange {
	idx := map[string]int{}
	var out []UpstreamChange
	get := func(u UpstreamEndpointStats) *UpstreamChange {
		i, ok := idx[u.Name()]
		if !ok {
			i = len(out)
			idx[u.Name()] = i
			out = append(out, UpstreamChange{Service: u.Service, Endpoint: u.Endpoint})
		}
		return &out[i]
	}
	for _, u := range b.Endpoints {
		ch := get(u)
		ch.BaselinePerRequest, ch.BaselineTimePerRequest = u.PerRequest, u.TimePerRequest
	}
	for _, u := range k.Endpoints {
		ch := get(u)
		ch.CandidatePerRequest, ch.CandidateTimePerRequest = u.PerRequest, u.TimePerRequest
		ch.CandidateMin, ch.CandidateMax = u.MinPerRequest, u.MaxPerRequest
	}
	slices.SortFunc(out, func(x, y UpstreamChange) int {
		if c := cmp.Compare(math.Abs(y.Delta()), math.Abs(x.Delta())); c != 0 {
			return c
		}
		if c := cmp.Compare(y.CandidatePerRequest+y.BaselinePerRequest, x.CandidatePerRequest+x.BaselinePerRequest); c != 0 {
			return c
		}
		return cmp.Compare(x.Name(), y.Name())
	})
	return out
}

// upstreamNPlusOne finds the upstream endpoint that looks like an HTTP N+1:
// one the candidate calls at least minCalls times per request and at least
// twice as often plus one as the baseline; the largest rise.
func upstreamNPlusOne(e *EndpointComparison, minCalls float64) (UpstreamChange, bool) {
	var best UpstreamChange
	found := false
	for _, u := range e.Upstream {
		if u.CandidatePerRequest >= minCalls && u.CandidatePerRequest >= 2*u.BaselinePerRequest+1 && (!found || u.Delta() > best.Delta()) {
			best, found = u, true
		}
	}
	return best, found
}

// upstreamSentence explains a change in calls per request: an HTTP N+1
// ("`GET /catalog` calls `catalog.test GET /products/{id}` 20 times per
// request (baseline 1)") or the change in total, naming the upstream
// endpoints that changed most.
func upstreamSentence(c *Comparison, e *EndpointComparison) (cause, text string) {
	if u, ok := upstreamNPlusOne(e, c.Options.NPlusOneMin); ok && e.UpstreamVerdict == Regression {
		e.UpstreamCall = u.Name()
		calls := FormatCount(u.CandidatePerRequest) + " times per request"
		if u.CandidateMin != u.CandidateMax {
			calls += fmt.Sprintf(" on average (%d–%d", u.CandidateMin, u.CandidateMax) + "; baseline " + FormatCount(u.BaselinePerRequest) + ")"
		} else {
			calls += " (baseline " + FormatCount(u.BaselinePerRequest) + ")"
		}
		s := fmt.Sprintf("HTTP N+1: `%s` calls `%s` %s", e.Endpoint, u.Name(), calls)
		if d := u.CandidateTimePerRequest - u.BaselineTimePerRequest; d >= 1 {
			s += fmt.Sprintf(", adding %s upstream time per request", FormatMs(d))
		}
		return CauseUpstreamNPlusOne, s
	}
	b, k := &e.Baseline.Upstream, &e.Candidate.Upstream
	d := k.PerRequest - b.PerRequest
	word := "more"
	if d < 0 {
		word = "fewer"
	}
	s := fmt.Sprintf("%s %s upstream calls per request (%s → %s)", FormatCount(math.Abs(d)), word, FormatCount(b.PerRequest), FormatCount(k.PerRequest))
	var named []string
	for _, u := range e.Upstream {
		if len(named) == 3 {
			break
		}
		if u.Delta()*d > 0 && math.Abs(u.Delta()) >= 0.5 {
			named = append(named, fmt.Sprintf("`%s` %s → %s", u.Name(), FormatCount(u.BaselinePerRequest), FormatCount(u.CandidatePerRequest)))
		}
	}
	if len(named) > 0 {
		s += ": " + strings.Join(named, ", ")
	}
	return CauseUpstream, s
}

// upstreamRegression explains a regression whose first evidence is the
// calls to mocked services, then failures and latency.
func upstreamRegression(c *Comparison, e *EndpointComparison, lat string) (cause string, parts []string) {
	cause, s := upstreamSentence(c, e)
	parts = append(parts, s)
	if e.FailureVerdict == Regression {
		parts = append(parts, failureSentence(e))
	}
	if lat != "" {
		return cause, append(parts, lat)
	}
	return cause, append(parts, noiseClause(e))
}

// upstreamLatencyCause explains a latency regression by the upstream calls
// when their time per request (in the mock: recorded timing) grew by at
// least 1 ms and half the mean latency's growth.
func upstreamLatencyCause(e *EndpointComparison, lat string) (cause, text string, ok bool) {
	b, k := &e.Baseline.Upstream, &e.Candidate.Upstream
	if !b.Counted() || !k.Counted() {
		return "", "", false
	}
	d := k.TimePerRequest - b.TimePerRequest
	if d < 1 || d < 0.5*(e.Candidate.Latency.Avg-e.Baseline.Latency.Avg) {
		return "", "", false
	}
	s := fmt.Sprintf("upstream time per request rose %s → %s", FormatMs(b.TimePerRequest), FormatMs(k.TimePerRequest))
	if len(e.Upstream) > 0 {
		best := slices.MaxFunc(e.Upstream, func(x, y UpstreamChange) int {
			return cmp.Compare(x.CandidateTimePerRequest-x.BaselineTimePerRequest, y.CandidateTimePerRequest-y.BaselineTimePerRequest)
		})
		s += fmt.Sprintf(" (`%s` %s → %s per request)", best.Name(), FormatMs(best.BaselineTimePerRequest), FormatMs(best.CandidateTimePerRequest))
	}
	return CauseUpstream, s + "; " + lat, true
}
