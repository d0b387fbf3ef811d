package analyzer

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"net/url"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/snapshots"
)

// SummarizeOptions tune Summarize. The zero value is useful.
type SummarizeOptions struct {
	// SampleSize is how many load-phase latencies per endpoint are kept (a
	// uniform reservoir sample) for Compare's bootstrap, and below which
	// percentiles are exact; zero means DefaultSampleSize.
	SampleSize int
	// Seed seeds the reservoir sampling, so that a summary is reproducible;
	// zero means 1.
	Seed uint64
}

// DefaultSampleSize is the per-endpoint latency sample kept by default:
// 8000 results, about 190 KB per endpoint.
const DefaultSampleSize = 8000

// maxFailureKinds bounds the distinct failure reasons tracked per endpoint.
const maxFailureKinds = 64

// Summarize reads a run's results and computes its figures, overall and per
// endpoint. Memory is bounded by the number of endpoints and fingerprints,
// not by the number of results. It stops at the first error the iterator
// yields, or when ctx is done.
func Summarize(ctx context.Context, info snapshots.RunInfo, results iter.Seq2[*snapshots.Result, error], opts SummarizeOptions) (*Summary, error) {
	sz, err := NewSummarizer(info, opts)
	if err != nil {
		return nil, err
	}
	n := 0
	for r, err := range results {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sz.op, err)
		}
		if n++; n&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", sz.op, err)
			}
		}
		if r != nil {
			sz.Add(r)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", sz.op, err)
	}
	return sz.Summary(), nil
}

// runAcc accumulates a whole run.
type runAcc struct {
	opts      SummarizeOptions
	endpoints map[string]*endpointAcc
	// load phase span and slices
	first, last time.Time
	slices      map[int]int64
	allSliced   bool
	loads       int64
	// sliceSpans bound each slice's load: an interleaved run's slices are
	// apart (the other side's run in between), so its span is their sum.
	sliceSpans map[int][2]time.Time
	// counted: the counter kept its unattributed statements, so every load
	// result's SQL counts (EstimatedSQL), and the load results are kept as
	// spans for EstimateSQL (72 bytes each).
	counted bool
	spans   []snapshots.SQLSpan
	// weights are the run's explain weights (RunInfo.ExplainWeights).
	weights map[int64]float64
	// lastE is the endpoint of the result added last: a run's results come
	// in runs of one endpoint, whose name is one string, so most find their
	// endpoint without hashing its name.
	lastE *endpointAcc
}

func (a *runAcc) add(r *snapshots.Result) {
	name := endpointName(r)
	e := a.lastE
	if e == nil || e.name != name {
		if e = a.endpoints[name]; e == nil {
			e = newEndpointAcc(name, a.opts)
			a.endpoints[name] = e
		}
		a.lastE = e
	}
	if r.Phase == snapshots.PhaseExplain {
		w, ok := a.weights[r.ExchangeID]
		if !ok || w <= 0 {
			w = 1
		}
		e.addExplain(r, w)
		return
	}
	a.loads++
	start := r.Intended
	if start.IsZero() {
		start = r.Sent
	}
	if !start.IsZero() && (a.first.IsZero() || start.Before(a.first)) {
		a.first = start
	}
	if r.Done.After(a.last) {
		a.last = r.Done
	}
	if r.Slice > 0 {
		a.slices[r.Slice]++
		sp, ok := a.sliceSpans[r.Slice]
		if !start.IsZero() && (!ok || sp[0].IsZero() || start.Before(sp[0])) {
			sp[0] = start
		}
		if r.Done.After(sp[1]) {
			sp[1] = r.Done
		}
		a.sliceSpans[r.Slice] = sp
	} else {
		a.allSliced = false
	}
	e.addLoad(r)
	if a.counted {
		e.loadAll.add(r.SQL, 1)
		if !r.Sent.IsZero() && !r.Done.IsZero() {
			a.spans = append(a.spans, snapshots.SQLSpan{Key: e.name, Start: r.Sent, End: r.Done, Statements: int64(r.Statements())})
		}
	}
}

// endpointName is the result's endpoint, or method and path when it has none.
func endpointName(r *snapshots.Result) string {
	if r.Endpoint != "" {
		return r.Endpoint
	}
	if r.Method == "" && r.URL == "" {
		return "(unknown)"
	}
	p := r.URL
	if u, err := url.Parse(r.URL); err == nil {
		p = u.Path
	}
	return r.Method + " " + p
}

func (a *runAcc) summary(info snapshots.RunInfo) *Summary {
	s := &Summary{Info: info, CPU: cpuUsage(info, a.slices, a.loads)}
	if a.loads > 0 && a.last.After(a.first) {
		s.Duration = a.last.Sub(a.first)
	}
	if a.loads > 0 && a.allSliced {
		var sum time.Duration
		for _, sp := range a.sliceSpans {
			if sp[1].After(sp[0]) && !sp[0].IsZero() {
				sum += sp[1].Sub(sp[0])
			}
		}
		// Slices with gaps between them (an interleaved comparison ran the
		// other side in between) measure only their own time.
		if sum > 0 && sum < s.Duration*9/10 {
			s.Duration = sum
		}
		s.Sliced = true
		for k := range a.slices {
			s.Slices = append(s.Slices, k)
		}
		slices.Sort(s.Slices)
	}
	accs := make([]*endpointAcc, 0, len(a.endpoints))
	for _, e := range a.endpoints {
		accs = append(accs, e)
	}
	slices.SortFunc(accs, func(x, y *endpointAcc) int {
		if c := cmp.Compare(y.requests, x.requests); c != 0 {
			return c
		}
		if c := cmp.Compare(y.explainRequests, x.explainRequests); c != 0 {
			return c
		}
		return cmp.Compare(x.name, y.name)
	})
	overall := newEndpointAcc("", SummarizeOptions{SampleSize: 1, Seed: 1})
	overall.sample = nil // its percentiles come from the merged histograms, or below
	allComplete := true
	var allLat, allSvc []int64
	for _, e := range accs {
		es := e.summary(s.Duration)
		es.Series = e.series.series(s.Sliced)
		s.Endpoints = append(s.Endpoints, es)
		overall.merge(e)
		if e.sample.complete() {
			for _, it := range e.sample.items {
				allLat = append(allLat, it.lat)
				allSvc = append(allSvc, it.svc)
			}
		} else {
			allComplete = false
		}
	}
	s.Overall = overall.summary(s.Duration)
	series := make([]*seriesAcc, len(accs))
	for i, e := range accs {
		series[i] = &e.series
	}
	overallSeries := mergeSeries(series)
	s.Overall.Series = overallSeries.series(s.Sliced)
	if allComplete {
		s.Overall.Latency = exactStats(allLat)
		s.Overall.ServiceTime = exactStats(allSvc)
	}
	s.Overall.SQL = weightedSQL(s.Endpoints)
	s.Overall.spans = a.spans
	s.SpanLoad(info.LoadStarted, info.LoadEnded)
	s.ShareUnattributedSQL(info.UnattributedSQL)
	CheckLoad(s)
	return s
}

// endpointAcc accumulates one endpoint.
type endpointAcc struct {
	name                           string
	requests, failed               int64
	explainRequests, explainFailed int64
	lat, svc                       latAcc
	sample                         *sample
	statuses                       [numStatusClasses]int64
	failures                       map[FailureCount]int64
	loadSQL, explainSQL            sqlAcc
	loadAll                        sqlAcc // every load result, when the counter kept the rest
	upstream                       upstreamPhases
	series                         seriesAcc
}

func newEndpointAcc(name string, opts SummarizeOptions) *endpointAcc {
	h := fnv.New64a()
	h.Write([]byte(name))
	return &endpointAcc{
		name:     name,
		lat:      newLatAcc(),
		svc:      newLatAcc(),
		sample:   newSample(opts.SampleSize, opts.Seed, h.Sum64()),
		failures: map[FailureCount]int64{},
		series:   newSeriesAcc(),
	}
}

func (e *endpointAcc) addExplain(r *snapshots.Result, w float64) {
	e.explainRequests++
	if r.Failed() {
		e.explainFailed++
	}
	if r.SQLCounted {
		e.explainSQL.add(r.SQL, w)
	}
	e.upstream.add(r, w)
}

func (e *endpointAcc) addLoad(r *snapshots.Result) {
	e.requests++
	e.statuses[statusClass(r.Status)]++ // an array: no map access per result
	if r.Failed() {
		e.failed++
		e.addFailure(r)
	}
	if r.SQLCounted {
		e.loadSQL.add(r.SQL, 1)
	}
	e.upstream.add(r, 1)
	sent := r.Sent
	intended := r.Intended
	if intended.IsZero() {
		intended = sent
	}
	if sent.IsZero() {
		sent = intended
	}
	if r.Done.IsZero() || intended.IsZero() {
		e.series.add(r, intended, -1)
		return
	}
	if r.Failed() {
		// Latency is over answered requests alone (k6's
		// expected_response:true): a failure is counted, in Failed and its
		// window, but its time (a refused connection's 0.1 ms, a timeout's
		// whole budget) would pull the percentiles either way.
		e.series.add(r, intended, -1)
		return
	}
	lat := max(r.Done.Sub(intended).Microseconds(), 0)
	e.series.add(r, intended, histogramIndex(lat))
	svc := max(r.Done.Sub(sent).Microseconds(), 0)
	e.lat.add(lat)
	e.svc.add(svc)
	slice := int32(0)
	if r.Slice > 0 {
		slice = int32(min(r.Slice, 1<<30))
	}
	e.sample.add(sampleItem{lat: lat, svc: svc, slice: slice})
}

func (e *endpointAcc) addFailure(r *snapshots.Result) {
	k := FailureCount{Status: r.Status}
	if r.GRPC {
		k.GRPC = grpcwire.CodeName(r.GRPCStatus)
	}
	if r.Error != "" {
		k = FailureCount{Error: shorten(r.Error, 120)}
	}
	if _, ok := e.failures[k]; !ok && len(e.failures) >= maxFailureKinds {
		k = FailureCount{Error: "other failures"}
	}
	e.failures[k]++
}

// numStatusClasses counts the keys of EndpointSummary.Statuses: "none",
// then "1xx" to "5xx".
const numStatusClasses = 6

// statusClassName names a status class index.
func statusClassName(i int) string {
	if i == 0 {
		return "none"
	}
	return string(rune('0'+i)) + "xx"
}

// statusClass returns the class index of a status: 0 for none, else
// status/100.
func statusClass(status int) int {
	if status >= 100 && status < 600 {
		return status / 100
	}
	return 0
}

// merge adds o's counts (not its sample) into e.
func (e *endpointAcc) merge(o *endpointAcc) {
	e.requests += o.requests
	e.failed += o.failed
	e.explainRequests += o.explainRequests
	e.explainFailed += o.explainFailed
	e.lat.merge(&o.lat)
	e.svc.merge(&o.svc)
	for k, v := range o.statuses {
		e.statuses[k] += v
	}

	for k, v := range o.failures {
		e.failures[k] += v
	}
	e.loadSQL.merge(&o.loadSQL)
	e.explainSQL.merge(&o.explainSQL)
	e.loadAll.merge(&o.loadAll)
	e.upstream.merge(&o.upstream)
}

func (e *endpointAcc) summary(span time.Duration) *EndpointSummary {
	s := &EndpointSummary{
		Endpoint:        e.name,
		Requests:        e.requests,
		Failed:          e.failed,
		ExplainRequests: e.explainRequests,
		ExplainFailed:   e.explainFailed,
		Statuses:        map[string]int64{},
		LoadSQL:         e.loadSQL.stats(SQLSourceLoad),
		ExplainSQL:      e.explainSQL.stats(SQLSourceExplain),
		Upstream:        e.upstream.stats(),
		Histogram:       histogramOf(e.lat.h),
		sample:          e.sample,
	}
	for i, n := range e.statuses {
		if n > 0 {
			s.Statuses[statusClassName(i)] = n
		}
	}
	if e.requests > 0 {
		s.SuccessRate = 100 * float64(e.requests-e.failed) / float64(e.requests)
	}
	if span > 0 {
		s.TPS = float64(e.requests) / span.Seconds()
	}
	if e.sample != nil && e.sample.complete() {
		lat := make([]int64, len(e.sample.items))
		svc := make([]int64, len(e.sample.items))
		for i, it := range e.sample.items {
			lat[i], svc[i] = it.lat, it.svc
		}
		s.Latency, s.ServiceTime = exactStats(lat), exactStats(svc)
	} else {
		s.Latency, s.ServiceTime = e.lat.stats(), e.svc.stats()
	}
	s.loadAll = e.loadAll.stats(SQLSourceLoad)
	if s.loadAll.Counted() {
		s.loadAll.Method = SQLMethodExact
	}
	s.EstimatedSQL = s.loadAll
	s.chooseSQL()
	for k, v := range e.failures {
		k.Count = v
		s.Failures = append(s.Failures, k)
	}
	slices.SortFunc(s.Failures, func(x, y FailureCount) int {
		if c := cmp.Compare(y.Count, x.Count); c != 0 {
			return c
		}
		if c := cmp.Compare(x.Status, y.Status); c != 0 {
			return c
		}
		if c := cmp.Compare(x.GRPC, y.GRPC); c != 0 {
			return c
		}
		return cmp.Compare(x.Error, y.Error)
	})
	if len(s.Failures) > 10 {
		s.Failures = s.Failures[:10]
	}
	return s
}

// latAcc accumulates latencies in µs: a histogram plus exact sum and extremes.
type latAcc struct {
	h       *hdrhistogram.Histogram
	sum     int64
	lo, hi  int64
	counted bool
}

func newLatAcc() latAcc { return latAcc{h: newHistogram()} }

func (l *latAcc) add(v int64) {
	record(l.h, v)
	l.sum += v
	if !l.counted || v < l.lo {
		l.lo = v
	}
	if !l.counted || v > l.hi {
		l.hi = v
	}
	l.counted = true
}

func (l *latAcc) merge(o *latAcc) {
	if !o.counted {
		return
	}
	l.h.Merge(o.h)
	l.sum += o.sum
	if !l.counted || o.lo < l.lo {
		l.lo = o.lo
	}
	if !l.counted || o.hi > l.hi {
		l.hi = o.hi
	}
	l.counted = true
}

func (l *latAcc) stats() LatencyStats { return histStats(l.h, l.sum, l.lo, l.hi) }

// shorten cuts s to at most n bytes (on a rune boundary), marking the cut
// with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
