package analyzer

import (
	"cmp"
	"math"
	"slices"
)

// isDisjoint reports whether the sides' intervals of quantile q are
// disjoint in the direction of the change delta.
func isDisjoint(base, cand []int64, q, conf, delta float64) bool {
	up, down := disjoint(base, cand, q, conf)
	return delta > 0 && up || delta < 0 && down
}

// latencyVerdict judges one percentile change against its intervals and the
// minimum absolute (ms) and relative changes: a regression or improvement
// when the change is at least both minimums and beyond the noise; unchanged
// only when the whole interval lies inside the minimums (equivalent);
// otherwise inconclusive, the interval allowing a change that counts. With
// equivalence false (the p99, whose interval is seldom narrow) a change
// below the minimums is unchanged whatever its interval.
func latencyVerdict(ch Change, minAbs, minRel float64, equivalence bool) Verdict {
	up := ch.Delta >= minAbs && ch.Ratio >= 1+minRel
	down := -ch.Delta >= minAbs && ch.Ratio <= 1/(1+minRel)
	switch {
	case up && ch.CILow > 1 && ch.Disjoint:
		return Regression
	case down && ch.CIHigh < 1 && ch.Disjoint:
		return Improvement
	case up || down || equivalence && !equivalent(ch, minAbs, minRel):
		return Inconclusive
	default:
		return Unchanged
	}
}

// sqlVerdict judges statements per request on their own; trusted says
// both runs' explain figures passed their self-check (Summary.SQLTrusted).
func sqlVerdict(b, k *EndpointSummary, o CompareOptions, trusted bool) (Verdict, bool) {
	if !b.SQL.Counted() || !k.SQL.Counted() {
		return "", false
	}
	exact := trusted && b.SQL.Source == SQLSourceExplain && k.SQL.Source == SQLSourceExplain
	bp, kp := b.SQL.PerRequest, k.SQL.PerRequest
	d := kp - bp
	switch {
	case d >= o.MinSQLIncrease && (exact || kp >= 1.5*bp):
		return Regression, exact
	case -d >= o.MinSQLIncrease && (exact || bp >= 1.5*kp):
		return Improvement, exact
	}
	return Unchanged, exact
}

// failureVerdict judges the failure rate with a one-sided two-proportion z
// test and the minimum rise in percentage points.
func failureVerdict(b, k *EndpointSummary, o CompareOptions) (Verdict, float64) {
	if b.Requests == 0 || k.Requests == 0 {
		return "", 0
	}
	nb, nk := float64(b.Requests), float64(k.Requests)
	pb, pk := float64(b.Failed)/nb, float64(k.Failed)/nk
	p := float64(b.Failed+k.Failed) / (nb + nk)
	se := math.Sqrt(p * (1 - p) * (1/nb + 1/nk))
	z := 0.0
	if se > 0 {
		z = (pk - pb) / se
	}
	dpp := 100 * (pk - pb)
	switch {
	case dpp >= o.MinFailureIncrease && z >= o.FailureZ:
		return Regression, z
	case -dpp >= o.MinFailureIncrease && z <= -o.FailureZ:
		return Improvement, z
	}
	return Unchanged, z
}

// combine makes an endpoint's verdict from its parts: any regression wins,
// then any improvement; then too few samples or an inconclusive latency
// change; else unchanged.
func combine(enough bool, parts ...Verdict) Verdict {
	has := func(v Verdict) bool { return slices.Contains(parts, v) }
	switch {
	case has(Regression):
		return Regression
	case has(Improvement):
		return Improvement
	case !enough || has(Inconclusive):
		return Inconclusive
	}
	return Unchanged
}

// fingerprintChanges compares statements per request by fingerprint,
// largest absolute change first, then most statements.
func fingerprintChanges(b, k *EndpointSummary) []FingerprintChange {
	idx := map[string]int{}
	var out []FingerprintChange
	get := func(fp string) *FingerprintChange {
		i, ok := idx[fp]
		if !ok {
			i = len(out)
			idx[fp] = i
			out = append(out, FingerprintChange{Fingerprint: fp})
		}
		return &out[i]
	}
	for _, f := range b.SQL.Fingerprints {
		fc := get(f.Fingerprint)
		fc.BaselinePerRequest, fc.BaselineErrorsPerRequest = f.PerRequest, f.ErrorsPerRequest
	}
	for _, f := range k.SQL.Fingerprints {
		fc := get(f.Fingerprint)
		fc.CandidatePerRequest, fc.CandidateErrorsPerRequest = f.PerRequest, f.ErrorsPerRequest
	}
	for _, f := range b.DBTime().Fingerprints {
		fc := get(f.Fingerprint)
		fc.BaselinePerCall, fc.BaselineDBTimePerRequest = f.PerCall, f.DBTimePerRequest
	}
	for _, f := range k.DBTime().Fingerprints {
		fc := get(f.Fingerprint)
		fc.CandidatePerCall, fc.CandidateDBTimePerRequest = f.PerCall, f.DBTimePerRequest
	}
	slices.SortFunc(out, func(x, y FingerprintChange) int {
		if c := cmp.Compare(math.Abs(y.Delta()), math.Abs(x.Delta())); c != 0 {
			return c
		}
		if c := cmp.Compare(y.CandidatePerRequest+y.BaselinePerRequest, x.CandidatePerRequest+x.BaselinePerRequest); c != 0 {
			return c
		}
		return cmp.Compare(x.Fingerprint, y.Fingerprint)
	})
	return out
}
