package analyzer

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/replaykit/replay/analyzer/respdiff"
)

// Verdict is the outcome of a comparison, per endpoint and overall.
type Verdict string

// The verdicts.
const (
	// Regression: the candidate is worse beyond the noise.
	Regression Verdict = "regression"
	// Improvement: the candidate is better beyond the noise, and worse in
	// nothing.
	Improvement Verdict = "improvement"
	// Unchanged: the confidence interval of the change lies inside the
	// minimum changes — no change that counts, shown, not merely unseen.
	Unchanged Verdict = "unchanged"
	// Inconclusive: too few samples, or an interval that allows a change of
	// at least the minimum without showing one beyond the noise.
	Inconclusive Verdict = "inconclusive"
)

// severity orders verdicts for sorting: regressions first.
func (v Verdict) severity() int {
	switch v {
	case Regression:
		return 0
	case Improvement:
		return 1
	case Inconclusive:
		return 2
	default:
		return 3
	}
}

// Causes name the evidence an endpoint's verdict rests on, as reported in
// EndpointComparison.Cause.
const (
	CauseNPlusOne  = "n+1"        // one statement repeated per row of another
	CauseSQL       = "sql"        // more (or fewer) statements per request
	CauseSlowerSQL = "slower-sql" // the same statements take longer
	CauseFailures  = "failures"   // the failure rate changed
	CauseApp       = "app"        // latency changed, not from the database
	CauseLatency   = "latency"    // latency changed, cause not told apart (SQL not counted, or an improvement)
	CauseSamples   = "samples"    // too few requests to judge
	CauseNoise     = "noise"      // a change no larger than the noise
	CauseOneSided  = "one-sided"  // the endpoint is in one run only
	CauseNoChange  = ""           // unchanged
)

// Comparison is the outcome of comparing a candidate run with a baseline.
type Comparison struct {
	// Baseline and Candidate are the two summaries compared.
	Baseline, Candidate *Summary
	// Verdict is the overall verdict: Inconclusive when the runs have
	// wiring Faults or either was Interrupted; else Regression when any
	// endpoint regressed or the CPU per request did (CPU); else Improvement
	// when any improved, or the CPU per request did; else Unchanged when at
	// least one endpoint was judged unchanged; else (nothing conclusive, or
	// no endpoints) Inconclusive. The CPU per request alone never makes it
	// Unchanged.
	Verdict Verdict
	// CPU compares the builds' CPU time per request (see CPUChange).
	CPU CPUChange
	// Longer estimates how long a run would settle most endpoints (see
	// LongerRun); nil unless most are inconclusive.
	Longer *LongerRun
	// Interrupted reports that either run was stopped before its load
	// ended (snapshots.RunInfo.Interrupted): the figures are of what was
	// completed, and the comparison has no verdict.
	Interrupted bool
	// Endpoints are the endpoints of either run, regressions first, then
	// improvements, inconclusive and unchanged ones; busiest first within
	// each group.
	Endpoints []*EndpointComparison
	// Counts counts endpoints per verdict.
	Counts map[Verdict]int
	// Method is the bootstrap method used (MethodPairedSlices or MethodIID).
	Method string
	// SlicePairs is the number of slice pairs (MethodPairedSlices); the
	// intervals resample those not SetAside.
	SlicePairs int
	// SetAside are the slice pairs left out of the latency figures the
	// verdict rests on (EndpointComparison.P95 and P99, their intervals)
	// because a burst of load on the machine made one of their slices far
	// slower than its run's others (at most a fifth of the pairs; see
	// disturbedPairs). Counts, SQL, failures and each side's own figures
	// (EndpointSummary.Latency) keep every slice.
	SetAside []SetAside
	// MockMisses are the mock's misses in the baseline and candidate runs.
	MockMisses [2]int64
	// Notes are run-level observations, one sentence each (e.g. mock misses).
	Notes []string
	// Faults are the wiring faults of the two runs (CompareFaults): a build
	// that did not use its own SQL counter or mock. With any, Verdict is
	// Inconclusive whatever the endpoints' verdicts: the figures do not
	// measure what they claim.
	Faults []Fault
	// Options are the options used, defaults filled in.
	Options CompareOptions
	// Names are the names explanations give the statements of either run,
	// by fingerprint: short, and apart from one another (StatementNames
	// with FingerprintWidth).
	Names map[string]string
}

// StatementName returns the name explanations give the fingerprint fp (see
// Names); ShortFingerprint's for one of neither run.
func (c *Comparison) StatementName(fp string) string {
	if n, ok := c.Names[fp]; ok {
		return n
	}
	return ShortFingerprint(fp, FingerprintWidth)
}

// statementNames names the fingerprints of both summaries.
func statementNames(base, cand *Summary) map[string]string {
	var fps []string
	for _, s := range []*Summary{base, cand} {
		for _, f := range s.LoadCounter.Fingerprints {
			fps = append(fps, f.Fingerprint)
		}
		for _, e := range s.Endpoints {
			for _, st := range []*SQLStats{&e.LoadSQL, &e.ExplainSQL} {
				for _, f := range st.Fingerprints {
					fps = append(fps, f.Fingerprint)
				}
			}
		}
	}
	return StatementNames(fps, FingerprintWidth)
}

// Endpoint returns the comparison of the named endpoint, or nil.
func (c *Comparison) Endpoint(name string) *EndpointComparison {
	for _, e := range c.Endpoints {
		if e.Endpoint == name {
			return e
		}
	}
	return nil
}

// EndpointComparison compares one endpoint.
type EndpointComparison struct {
	// Endpoint is the method and path template.
	Endpoint string
	// Baseline and Candidate are the endpoint's figures on each side; an
	// empty summary (zero Requests) when the endpoint is in one run only.
	Baseline, Candidate *EndpointSummary
	// Verdict is the endpoint's verdict.
	Verdict Verdict
	// Cause names the main evidence: one of the Cause constants.
	Cause string
	// Explanation is one sentence with the evidence and its numbers, e.g.
	// "N+1: `SELECT … FROM order_items WHERE order_id = ?` runs 50 times per
	// request (baseline 0)".
	Explanation string
	// Fingerprint is the statement the explanation names as the cause (an
	// N+1 or a slower statement); "" otherwise.
	Fingerprint string
	// P95 and P99 compare the latency percentiles: the figures the verdict
	// rests on, which every report shows (see Change.WithoutSetAside).
	P95, P99 Change
	// SQLVerdict judges statements per request on their own ("" when SQL
	// was not counted on both sides).
	SQLVerdict Verdict
	// SQLExact reports whether both sides' counts come from the explain
	// phase and both runs' self-checks (Summary.SQLCheck) agree.
	SQLExact bool
	// SQL compares statements per request by fingerprint, largest change
	// first.
	SQL []FingerprintChange
	// FailureVerdict judges the failure rate.
	FailureVerdict Verdict
	// FailureZ is the two-proportion z score of the failure-rate change.
	FailureZ float64
	// Responses compares the two builds' answers to the same requests;
	// nil when either run kept none (or none of this endpoint).
	Responses *respdiff.Summary
	// ResponseVerdict judges the answers: Regression when any differs
	// beyond the noise and the rules, else Unchanged; "" without Responses.
	ResponseVerdict Verdict
	// UpstreamVerdict judges calls to mocked services per request on their
	// own ("" when not counted on both sides); UpstreamExact reports that
	// both sides' counts come from the explain phase.
	UpstreamVerdict Verdict
	UpstreamExact   bool
	// Upstream compares calls per request by upstream endpoint, largest
	// change first.
	Upstream []UpstreamChange
	// UpstreamCall is the upstream endpoint an explanation names as the
	// cause (an HTTP N+1), e.g. "catalog.test GET /products/{id}"; ""
	// otherwise.
	UpstreamCall string
}

// Change compares one latency percentile, in milliseconds.
type Change struct {
	Baseline, Candidate float64
	// Delta is Candidate - Baseline.
	Delta float64
	// Ratio is Candidate / Baseline.
	Ratio float64
	// CILow and CIHigh bound the bootstrap confidence interval of Ratio;
	// both zero when it was not computed (too few samples).
	CILow, CIHigh float64
	// Disjoint reports whether the two sides' distribution-free intervals of
	// the percentile (see the package documentation) do not overlap; a
	// verdict other than unchanged needs it.
	Disjoint bool
	// MinDetectable is the smallest rise, as a ratio (1.15 is 15%), this
	// run could have reported for the percentile: the interval's half-width
	// and never less than the minimum change (see minDetectable); zero when
	// the interval was not computed.
	MinDetectable float64
	// Verdict judges this percentile on its own; "" when not judged.
	Verdict Verdict
	// Method is the bootstrap method (MethodPairedSlices or MethodIID).
	Method string
	// WithoutSetAside reports that Baseline and Candidate (and Delta and
	// Ratio) leave out the slice pairs set aside (Comparison.SetAside), as
	// the interval does, and so differ from the sides' percentiles over all
	// their requests (EndpointSummary.Latency); false: they are those.
	WithoutSetAside bool
}

// FingerprintChange compares one statement fingerprint.
type FingerprintChange struct {
	Fingerprint string
	// BaselinePerRequest and CandidatePerRequest are statements per request
	// (from each side's preferred SQL source).
	BaselinePerRequest, CandidatePerRequest float64
	// BaselinePerCall and CandidatePerCall are the mean database time of one
	// statement in milliseconds (from each side's DBTime source; zero when
	// unknown).
	BaselinePerCall, CandidatePerCall float64
	// BaselineDBTimePerRequest and CandidateDBTimePerRequest are database
	// time per request in milliseconds (DBTime sources).
	BaselineDBTimePerRequest, CandidateDBTimePerRequest float64
	// BaselineErrorsPerRequest and CandidateErrorsPerRequest are the
	// statements per request the server rejected (preferred SQL source);
	// they are not in the other figures.
	BaselineErrorsPerRequest, CandidateErrorsPerRequest float64
}

// ErrorsDelta is the change in rejected statements per request.
func (f FingerprintChange) ErrorsDelta() float64 {
	return f.CandidateErrorsPerRequest - f.BaselineErrorsPerRequest
}

// Delta is the change in statements per request.
func (f FingerprintChange) Delta() float64 { return f.CandidatePerRequest - f.BaselinePerRequest }

// Compare compares a candidate run with a baseline, endpoint by endpoint.
// Latency counts only beyond the noise: the bootstrap confidence interval of
// the candidate/baseline ratio of the p95 (and p99) must exclude 1, and the
// change must exceed both the absolute and the relative minimums. SQL
// statements per request and the failure rate count on their own. See the
// package documentation for the method.
func Compare(base, cand *Summary, opts CompareOptions) (*Comparison, error) {
	if base == nil || cand == nil {
		return nil, errors.New("compare: missing summary")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	c := &Comparison{
		Baseline:   base,
		Candidate:  cand,
		Options:    o,
		Method:     MethodIID,
		Counts:     map[Verdict]int{},
		MockMisses: [2]int64{base.Info.MockMisses, cand.Info.MockMisses},
		Names:      statementNames(base, cand),
	}
	pairA, pairB, pairs := slicePairs(base, cand, o.MinBlocks)
	if pairs > 0 {
		c.Method, c.SlicePairs = MethodPairedSlices, pairs
		if c.SetAside = disturbedPairs(base, cand, pairA, pairB, pairs); len(c.SetAside) > 0 {
			pairA, pairB, pairs = withoutPairs(pairA, pairB, pairs, c.SetAside)
			c.Notes = append(c.Notes, setAsideSentence(c.SetAside, c.SlicePairs))
		}
	}
	rc, err := o.Responses.Compile()
	if err != nil {
		return nil, fmt.Errorf("compare: %w", err)
	}
	names := endpointUnion(base, cand)
	c.Endpoints = make([]*EndpointComparison, len(names))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), max(len(names), 1)) {
		wg.Go(func() {
			for i := range next {
				c.Endpoints[i] = compareEndpoint(c, names[i], pairA, pairB, pairs)
				compareResponses(c, c.Endpoints[i], rc)
			}
		})
	}
	for i := range names {
		next <- i
	}
	close(next)
	wg.Wait()
	slices.SortStableFunc(c.Endpoints, func(x, y *EndpointComparison) int {
		return cmp.Compare(x.Verdict.severity(), y.Verdict.severity())
	})
	for _, e := range c.Endpoints {
		c.Counts[e.Verdict]++
	}
	c.CPU = compareCPU(c)
	switch {
	case c.Counts[Regression] > 0 || c.CPU.Verdict == Regression:
		c.Verdict = Regression
	case c.Counts[Improvement] > 0 || c.CPU.Verdict == Improvement:
		c.Verdict = Improvement
	case c.Counts[Unchanged] > 0:
		c.Verdict = Unchanged
	default:
		c.Verdict = Inconclusive
	}
	c.Faults = append(CompareFaults(base.Info, cand.Info), AuthFaults(base.Info, cand.Info)...)
	if len(c.Faults) > 0 {
		c.Verdict = Inconclusive
	}
	if c.Interrupted = base.Info.Interrupted || cand.Info.Interrupted; c.Interrupted {
		c.Verdict = Inconclusive
	}
	c.addRunNotes()
	if n := contentionNote(c); n != "" {
		c.Notes = append(c.Notes, n)
	}
	c.addLongerRun()
	return c, nil
}

// endpointUnion lists the endpoints of either summary, busiest first
// (requests of both sides), then by name.
func endpointUnion(base, cand *Summary) []string {
	load := map[string]int64{}
	for _, s := range []*Summary{base, cand} {
		for _, e := range s.Endpoints {
			load[e.Endpoint] += e.Requests + e.ExplainRequests
		}
	}
	names := byCount(load)
	return names
}

// slicePairs pairs the slices of two interleaved runs by rank (the i-th
// slice of one with the i-th of the other), which holds whether slices are
// numbered per run (1, 2, 3 on both) or across both (A 1, 3, 5; B 2, 4, 6).
// Surplus slices of the longer run join its last pair. It returns no pairs
// when either run was not sliced or there are fewer than minBlocks pairs.
func slicePairs(base, cand *Summary, minBlocks int) (pairA, pairB map[int32]int32, pairs int) {
	if !base.Sliced || !cand.Sliced {
		return nil, nil, 0
	}
	pairs = min(len(base.Slices), len(cand.Slices))
	if pairs < minBlocks {
		return nil, nil, 0
	}
	index := func(ss []int) map[int32]int32 {
		m := make(map[int32]int32, len(ss))
		for i, s := range ss {
			m[int32(min(s, 1<<30))] = int32(min(i, pairs-1))
		}
		return m
	}
	return index(base.Slices), index(cand.Slices), pairs
}

// compareEndpoint judges one endpoint; it only reads c.
func compareEndpoint(c *Comparison, name string, pairA, pairB map[int32]int32, pairs int) *EndpointComparison {
	o := c.Options
	e := &EndpointComparison{Endpoint: name, Baseline: c.Baseline.Endpoint(name), Candidate: c.Candidate.Endpoint(name)}
	if e.Baseline == nil {
		e.Baseline = &EndpointSummary{Endpoint: name}
	}
	if e.Candidate == nil {
		e.Candidate = &EndpointSummary{Endpoint: name}
	}
	b, k := e.Baseline, e.Candidate
	e.P95 = Change{Baseline: b.Latency.P95, Candidate: k.Latency.P95}
	e.P99 = Change{Baseline: b.Latency.P99, Candidate: k.Latency.P99}
	for _, ch := range []*Change{&e.P95, &e.P99} {
		ch.Delta = ch.Candidate - ch.Baseline
		ch.Ratio = ratio(int64(math.Round(ch.Candidate*1000)), int64(math.Round(ch.Baseline*1000)))
	}
	e.SQL = fingerprintChanges(b, k)
	e.SQLVerdict, e.SQLExact = sqlVerdict(b, k, o, c.Baseline.SQLTrusted() && c.Candidate.SQLTrusted())
	e.FailureVerdict, e.FailureZ = failureVerdict(b, k, o)
	compareUpstream(e, o)

	if pairs == 0 {
		pairA, pairB = nil, nil
	}
	bs, ks := newSide(b.sample, pairA, pairs), newSide(k.sample, pairB, pairs)
	if len(c.SetAside) > 0 && keptSome(b.sample, bs) && keptSome(k.sample, ks) {
		// The change is judged without the pairs set aside: its figures
		// too, on every endpoint alike.
		withoutSetAside(&e.P95, bs, ks, 0.95)
		withoutSetAside(&e.P99, bs, ks, 0.99)
	}
	enough := b.sample != nil && k.sample != nil &&
		len(b.sample.items) >= o.MinSamples && len(k.sample.items) >= o.MinSamples
	if enough {
		h := fnv.New64a()
		h.Write([]byte(name))
		rng := rand.New(rand.NewPCG(o.Seed, h.Sum64()))
		ci := bootstrapRatios(bs, ks, pairs, o.Resamples, o.Confidence, rng)
		e.P95.CILow, e.P95.CIHigh, e.P95.Method = ci.p95Low, ci.p95High, ci.method
		e.P95.Disjoint = isDisjoint(bs.values, ks.values, 0.95, o.Confidence, e.P95.Delta)
		rel, relP99 := o.MinRelative, o.MinRelativeP99
		if pairs == 0 {
			rel, relP99 = max(rel, o.MinRelativeSequential), max(relP99, o.MinRelativeSequential)
		}
		e.P95.MinDetectable = minDetectable(e.P95, durMs(o.MinChange), rel)
		e.P95.Verdict = latencyVerdict(e.P95, durMs(o.MinChange), rel, true)
		if min(b.Latency.Count, k.Latency.Count) >= int64(o.MinSamplesP99) {
			e.P99.CILow, e.P99.CIHigh, e.P99.Method = ci.p99Low, ci.p99High, ci.method
			e.P99.Disjoint = isDisjoint(bs.values, ks.values, 0.99, o.Confidence, e.P99.Delta)
			e.P99.MinDetectable = minDetectable(e.P99, durMs(o.MinChangeP99), relP99)
			e.P99.Verdict = latencyVerdict(e.P99, durMs(o.MinChangeP99), relP99, false)
		}
	}
	e.Verdict = combine(enough, e.P95.Verdict, e.P99.Verdict, e.SQLVerdict, e.FailureVerdict, e.UpstreamVerdict)
	explain(c, e)
	return e
}

// withoutSetAside sets ch to the q-quantiles of the sides' values kept
// (the slice pairs set aside left out).
func withoutSetAside(ch *Change, bs, ks side, q float64) {
	b, k := quantile(bs.values, q), quantile(ks.values, q)
	ch.Baseline, ch.Candidate = usToMs(b), usToMs(k)
	ch.Delta, ch.Ratio = ch.Candidate-ch.Baseline, ratio(k, b)
	ch.WithoutSetAside = true
}

// keptSome reports whether a side's figures can leave the pairs set aside
// out: it has no sample (no requests: nothing to leave out), or some of
// its sample lies in the pairs kept.
func keptSome(s *sample, sd side) bool {
	return s == nil || len(s.items) == 0 || len(sd.values) > 0
}

// byCount returns the keys of counts, the largest count first, then by key.
func byCount[K cmp.Ordered](counts map[K]int64) []K {
	keys := make([]K, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b K) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return keys
}
