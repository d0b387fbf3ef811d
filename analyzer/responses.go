package analyzer

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/snapshots"
)

// CauseBehaviour is the Cause of an endpoint whose answers changed (see
// EndpointComparison.Responses).
const CauseBehaviour = "behaviour"

// ResponseSource is a run whose captured answers can be read; RunSources
// that are not (fixtures, older readers) have none. *snapshots.Run is one.
type ResponseSource interface {
	Responses(fn func(*snapshots.ResponseSample) error) error
	ResponseHashes(fn func(snapshots.ResponseHash) error) error
}

var _ ResponseSource = (*snapshots.Run)(nil)

// RecordedSource gives recorded exchanges by ID: *snapshots.Snapshot is
// one.
type RecordedSource interface {
	Exchange(ctx context.Context, id int64) (*snapshots.Exchange, error)
}

var _ RecordedSource = (*snapshots.Snapshot)(nil)

// RunResponses are the answers a run captured, per endpoint.
type RunResponses struct {
	// Endpoints holds each endpoint's answers (samples and hashes).
	Endpoints map[string]*respdiff.Side
	// Recorded holds, per endpoint, the recording's answers to the
	// requests sampled; nil unless CompareRuns was given the snapshot
	// (CompareOptions.Recorded).
	Recorded map[string]*respdiff.Side
}

// ReadResponses reads the answers run captured; nil (and no error) when it
// has none: a RunSource that is no ResponseSource, a run file written
// before answers were kept, or a run that kept none. Every side's Host is
// the run's target.
func ReadResponses(run RunSource) (*RunResponses, error) {
	src, ok := run.(ResponseSource)
	if !ok {
		return nil, nil
	}
	host := run.Info().Target
	rr := &RunResponses{Endpoints: map[string]*respdiff.Side{}}
	side := func(endpoint string) *respdiff.Side {
		s := rr.Endpoints[endpoint]
		if s == nil {
			s = &respdiff.Side{Host: host}
			rr.Endpoints[endpoint] = s
		}
		return s
	}
	err := src.Responses(func(s *snapshots.ResponseSample) error {
		side(s.Endpoint).Add(s.ExchangeID, respdiff.FromSample(s))
		return nil
	})
	if err == nil {
		var hs respdiff.HashSampler
		err = src.ResponseHashes(func(h snapshots.ResponseHash) error {
			hs.Add(side(h.Endpoint), h)
			return nil
		})
		for _, s := range rr.Endpoints {
			s.HashedOneIn = hs.OneIn()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read responses: %w", err)
	}
	if len(rr.Endpoints) == 0 {
		return nil, nil
	}
	return rr, nil
}

// recordedLister lists a snapshot's exchanges: *snapshots.Snapshot is one.
// readRecorded streams them when it wants many.
type recordedLister interface {
	Exchanges(ctx context.Context, f snapshots.Filter) iter.Seq2[*snapshots.Exchange, error]
}

// manyRecorded is how many exchanges readRecorded reads one by one at
// most; beyond, it streams the snapshot's inbound exchanges.
const manyRecorded = 256

// readRecorded reads the recording's answers to the requests of sides:
// the sampled ones, and with hashes those hashed too (for their hash
// only: nothing of them is kept but it). With strict false, an exchange it
// cannot read is left out (it only teaches noise).
func readRecorded(ctx context.Context, src RecordedSource, sides map[string]*respdiff.Side, hashes, strict bool) (map[string]*respdiff.Side, error) {
	type wanted struct {
		endpoint string
		sample   bool
	}
	want := map[int64]wanted{}
	for name, s := range sides {
		if hashes {
			for _, h := range s.Hashes {
				want[h.ExchangeID] = wanted{name, false}
			}
		}
		for id := range s.Samples {
			want[id] = wanted{name, true}
		}
	}
	out := map[string]*respdiff.Side{}
	add := func(e *snapshots.Exchange, w wanted) {
		s := out[w.endpoint]
		if s == nil {
			s = &respdiff.Side{}
			out[w.endpoint] = s
		}
		s.AddRecorded(e, w.sample)
	}
	if l, ok := src.(recordedLister); ok && len(want) > manyRecorded {
		for e, err := range l.Exchanges(ctx, snapshots.Filter{Direction: snapshots.Inbound}) {
			if err != nil {
				return nil, fmt.Errorf("recorded answers: %w", err)
			}
			if w, ok := want[e.ID]; ok {
				add(e, w)
				delete(want, e.ID)
			}
		}
		if len(want) > 0 && strict {
			return nil, fmt.Errorf("recorded answers: %d replayed exchanges (e.g. %d) are not in the snapshot", len(want), slices.Min(slices.Collect(maps.Keys(want))))
		}
		return out, nil
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		e, err := src.Exchange(ctx, id)
		if err != nil && (strict || ctx.Err() != nil) {
			return nil, fmt.Errorf("recorded answer of exchange %d: %w", id, err)
		}
		if err == nil {
			add(e, want[id])
		}
	}
	return out, nil
}

// compareResponses compares the endpoint's answers when both runs kept
// some, and judges them: any difference neither ignored nor accepted is a
// regression (CauseBehaviour), explained by the differences' sentence —
// after the SQL, failure and latency evidence when that makes a
// regression already.
func compareResponses(c *Comparison, e *EndpointComparison, rc *respdiff.Comparer) {
	br, kr := c.Baseline.Responses, c.Candidate.Responses
	if rc == nil || br == nil || kr == nil || e.Cause == CauseOneSided {
		return
	}
	b, k := br.Endpoints[e.Endpoint], kr.Endpoints[e.Endpoint]
	if b == nil || k == nil {
		return
	}
	s := rc.Endpoint(b, k, br.Recorded[e.Endpoint])
	if s.Compared == 0 {
		return
	}
	e.Responses = s
	if s.Differing == 0 {
		e.ResponseVerdict = Unchanged
		return
	}
	sentence := s.Sentence()
	if !twiceAnswered(b) {
		// Without two answers of the baseline to one request, nothing of
		// this endpoint's noise is known: an id or a time the app makes up
		// differs between builds as it would between two calls.
		e.ResponseVerdict = Inconclusive
		sentence += " (noise unknown: the baseline answered each request once; a longer run tells)"
		if e.Verdict == Unchanged {
			e.Verdict, e.Cause = Inconclusive, CauseSamples
		}
		e.Explanation = joinSentences(e.Explanation, sentence)
		return
	}
	e.ResponseVerdict = Regression
	if e.Verdict == Regression {
		e.Explanation += "; " + sentence
		return
	}
	e.Verdict, e.Cause = Regression, CauseBehaviour
	if e.Explanation != "" {
		sentence += "; " + e.Explanation
	}
	e.Explanation = sentence
}

// twiceAnswered reports whether the side answered some request twice, so
// that noise could be learned.
func twiceAnswered(s *respdiff.Side) bool {
	for _, as := range s.Samples {
		if len(as) >= 2 {
			return true
		}
	}
	return false
}

// joinSentences joins two parts of an explanation.
func joinSentences(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// ResponseCheck compares a build's answers with the recorded ones
// (CheckResponses).
type ResponseCheck struct {
	// Endpoints are the endpoints compared, those with differences first
	// (most differing answers first), then by name.
	Endpoints []EndpointResponses
	// Compared and Differing total the endpoints' counts.
	Compared, Differing int64
}

// EndpointResponses is one endpoint's comparison of answers.
type EndpointResponses struct {
	Endpoint  string
	Responses *respdiff.Summary
}

// Passed reports whether no answer differed.
func (r *ResponseCheck) Passed() bool { return r.Differing == 0 }

// CheckResponses compares the answers run captured with the recorded
// answers to the same requests (replay run --check-responses), endpoint by
// endpoint, under rules: the recording takes the baseline's place, what
// differs between the build's own two answers to the same request is noise
// (ignored and listed), values the recording holds redacted are ignored,
// and answers beyond the sample are compared with the recorded body's hash
// (see respdiff.Comparer.Endpoint). recorded is the snapshot replayed
// (*snapshots.Snapshot). It returns nil, and no error, when run kept no
// answers; an error for rules that are not well formed (one line, naming
// the flag) or a recorded exchange it cannot read.
func CheckResponses(ctx context.Context, run RunSource, recorded RecordedSource, rules respdiff.Rules) (*ResponseCheck, error) {
	rc, err := rules.Compile()
	if err != nil {
		return nil, err
	}
	rr, err := ReadResponses(run)
	if err != nil || rr == nil {
		return nil, err
	}
	rec, err := readRecorded(ctx, recorded, rr.Endpoints, true, true)
	if err != nil {
		return nil, fmt.Errorf("check responses: %w", err)
	}
	out := &ResponseCheck{}
	for name, side := range rr.Endpoints {
		r := rec[name]
		if r == nil {
			r = &respdiff.Side{}
		}
		s := rc.Check(side, r)
		if s.Compared == 0 {
			continue
		}
		out.Endpoints = append(out.Endpoints, EndpointResponses{Endpoint: name, Responses: s})
		out.Compared += s.Compared
		out.Differing += s.Differing
	}
	slices.SortFunc(out.Endpoints, func(a, b EndpointResponses) int {
		return cmp.Or(cmp.Compare(b.Responses.Differing, a.Responses.Differing), cmp.Compare(a.Endpoint, b.Endpoint))
	})
	return out, nil
}
