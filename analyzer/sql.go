package analyzer

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// maxFingerprints bounds the distinct fingerprints tracked per endpoint and
// phase; the rest are lumped together as otherFingerprints.
const (
	maxFingerprints   = 10000
	otherFingerprints = "(other statements)"
)

// sqlAcc accumulates the statements attributed to requests of one phase.
type sqlAcc struct {
	requests int64
	// weight sums the requests' weights: the requests of the load each
	// stands for (an explain request of a common shape counts more); one
	// per request when unweighted.
	weight float64
	fps    map[string]*fpAcc
}

// fpAcc accumulates one fingerprint.
type fpAcc struct {
	count  int64
	dur    time.Duration
	wcount float64 // count weighted by the requests' weights
	wdur   float64 // database time in ns, weighted likewise
	errors int64   // statements the server rejected, apart from count and dur
	werr   float64 // errors weighted likewise
	with   int64   // requests with at least one completed
	lo, hi int     // per-request count among requests with at least one (lo math.MaxInt while with is 0)
}

// add counts one request's statements; w is the number of requests it
// stands for (1 unless weighted).
func (a *sqlAcc) add(counts []snapshots.SQLCount, w float64) {
	a.requests++
	a.weight += w
	if a.fps == nil {
		a.fps = map[string]*fpAcc{}
	}
	for i, c := range counts {
		if dup(counts, i) {
			continue
		}
		n, d, e := c.Count, c.Duration, c.Errors
		for _, o := range counts[i+1:] {
			if o.Fingerprint == c.Fingerprint {
				n += o.Count
				d += o.Duration
				e += o.Errors
			}
		}
		n, e = max(n, 0), max(e, 0)
		if n == 0 && e == 0 {
			continue
		}
		fp := c.Fingerprint
		f := a.fps[fp]
		if f == nil {
			if len(a.fps) >= maxFingerprints {
				fp = otherFingerprints
				f = a.fps[fp]
			}
			if f == nil {
				f = &fpAcc{lo: math.MaxInt}
				a.fps[fp] = f
			}
		}
		f.errors += int64(e)
		f.werr += w * float64(e)
		if n == 0 {
			continue
		}
		f.count += int64(n)
		f.dur += d
		f.wcount += w * float64(n)
		f.wdur += w * float64(d)
		f.with++
		f.lo = min(f.lo, n)
		f.hi = max(f.hi, n)
	}
}

// dup reports whether counts[i]'s fingerprint appeared earlier in counts.
func dup(counts []snapshots.SQLCount, i int) bool {
	for _, o := range counts[:i] {
		if o.Fingerprint == counts[i].Fingerprint {
			return true
		}
	}
	return false
}

func (a *sqlAcc) merge(o *sqlAcc) {
	a.requests += o.requests
	a.weight += o.weight
	if len(o.fps) > 0 && a.fps == nil {
		a.fps = map[string]*fpAcc{}
	}
	for fp, of := range o.fps {
		f := a.fps[fp]
		if f == nil {
			f = &fpAcc{lo: of.lo, hi: of.hi}
			a.fps[fp] = f
		}
		f.count += of.count
		f.dur += of.dur
		f.wcount += of.wcount
		f.wdur += of.wdur
		f.errors += of.errors
		f.werr += of.werr
		f.with += of.with
		f.lo = min(f.lo, of.lo)
		f.hi = max(f.hi, of.hi)
	}
}

func (a *sqlAcc) stats(source string) SQLStats {
	if a.requests == 0 {
		return SQLStats{}
	}
	s := SQLStats{Source: source, Requests: a.requests}
	// Per-request figures are weighted means: each request counts for the
	// requests of the load it stands for.
	n := a.weight
	if n <= 0 {
		n = float64(a.requests)
	}
	var wcount, wdur, werr float64
	for fp, f := range a.fps {
		fs := FingerprintStats{
			Fingerprint:      fp,
			Count:            f.count,
			PerRequest:       f.wcount / n,
			MaxPerRequest:    f.hi,
			DBTimePerRequest: f.wdur / float64(time.Millisecond) / n,
			Errors:           f.errors,
			ErrorsPerRequest: f.werr / n,
		}
		if f.count > 0 {
			fs.PerCall = durMs(f.dur) / float64(f.count)
		}
		if f.with == a.requests {
			fs.MinPerRequest = f.lo
		}
		s.Statements += f.count
		wcount += f.wcount
		wdur += f.wdur
		s.Errors += f.errors
		werr += f.werr
		s.Fingerprints = append(s.Fingerprints, fs)
	}
	s.PerRequest = wcount / n
	s.ErrorsPerRequest = werr / n
	s.DBTimePerRequest = wdur / float64(time.Millisecond) / n
	sortFingerprints(s.Fingerprints)
	return s
}

func sortFingerprints(fs []FingerprintStats) {
	slices.SortFunc(fs, func(x, y FingerprintStats) int {
		if c := cmp.Compare(y.PerRequest, x.PerRequest); c != 0 {
			return c
		}
		return cmp.Compare(x.Fingerprint, y.Fingerprint)
	})
}

func durMs(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// weightedSQL combines the preferred SQL figures of endpoints into figures
// for the whole run, weighting each endpoint by its load-phase requests (its
// explain requests when it had no load), so that per-request figures follow
// the traffic mix rather than how many requests each endpoint had explained.
// Source is that of the endpoints when they all agree, load-estimate when
// some are load and some load-estimate, "explain+load" otherwise; Method is
// the endpoints' when they agree, else the least sure one's (an estimate).
func weightedSQL(eps []*EndpointSummary) SQLStats {
	var s SQLStats
	fps := map[string]*fpSum{}
	var total, margin2 float64
	counted := 0
	for _, e := range eps {
		if !e.SQL.Counted() {
			continue
		}
		counted++
		w := float64(e.Requests)
		if w == 0 {
			w = float64(e.ExplainRequests)
		}
		s.Source = combineSQLSource(s.Source, e.SQL.Source)
		if counted == 1 || methodRank(e.SQL.Method) > methodRank(s.Method) {
			s.Method = e.SQL.Method
		}
		if e.SQL.Estimated() {
			margin2 += w * e.SQL.Margin * w * e.SQL.Margin
		}
		total += w
		s.Requests += e.SQL.Requests
		s.Statements += e.SQL.Statements
		s.Errors += e.SQL.Errors
		s.PerRequest += w * e.SQL.PerRequest
		s.ErrorsPerRequest += w * e.SQL.ErrorsPerRequest
		s.DBTimePerRequest += w * e.SQL.DBTimePerRequest
		addFingerprintSums(fps, e.SQL.Fingerprints, w)
	}
	if counted == 0 {
		return SQLStats{}
	}
	if total == 0 {
		total = 1
	}
	s.PerRequest /= total
	s.DBTimePerRequest /= total
	s.Margin = math.Sqrt(margin2) / total
	s.ErrorsPerRequest /= total
	s.Fingerprints = fingerprintAverages(fps, total, counted)
	sortFingerprints(s.Fingerprints)
	return s
}

// fpSum accumulates one fingerprint's figures across endpoints for weightedSQL.
type fpSum struct {
	count, errors         int64
	perReq, dbReq, errReq float64
	lo, hi, endpointsWith int
}

// combineSQLSource merges an endpoint's SQL source into the run's so far ("" when none yet).
func combineSQLSource(cur, next string) string {
	switch {
	case cur == "":
		return next
	case cur != next && cur != SQLSourceExplain && next != SQLSourceExplain:
		return SQLSourceLoadEstimate // load and load-estimate
	case cur != next:
		return SQLSourceExplain + "+" + SQLSourceLoad
	}
	return cur
}

// addFingerprintSums adds one endpoint's fingerprints, weighted by w, to fps.
func addFingerprintSums(fps map[string]*fpSum, fingerprints []FingerprintStats, w float64) {
	for _, f := range fingerprints {
		a := fps[f.Fingerprint]
		if a == nil {
			a = &fpSum{lo: f.MinPerRequest}
			fps[f.Fingerprint] = a
		}
		a.count += f.Count
		a.errors += f.Errors
		a.errReq += w * f.ErrorsPerRequest
		a.perReq += w * f.PerRequest
		a.dbReq += w * f.DBTimePerRequest
		a.lo = min(a.lo, f.MinPerRequest)
		a.hi = max(a.hi, f.MaxPerRequest)
		a.endpointsWith++
	}
}

// fingerprintAverages turns the weighted sums into per-request figures (unsorted); a minimum counts only if all counted endpoints ran the fingerprint.
func fingerprintAverages(fps map[string]*fpSum, total float64, counted int) []FingerprintStats {
	var out []FingerprintStats
	for fp, a := range fps {
		f := FingerprintStats{
			Fingerprint:      fp,
			Count:            a.count,
			PerRequest:       a.perReq / total,
			MaxPerRequest:    a.hi,
			DBTimePerRequest: a.dbReq / total,
			Errors:           a.errors,
			ErrorsPerRequest: a.errReq / total,
		}
		if a.endpointsWith == counted {
			f.MinPerRequest = a.lo
		}
		if a.perReq > 0 {
			f.PerCall = a.dbReq / a.perReq
		}
		out = append(out, f)
	}
	return out
}

// methodRank orders SQL methods from the surest: exact, none given,
// unknown, estimated.
func methodRank(m string) int {
	return map[string]int{SQLMethodExact: 0, "": 1, SQLMethodUnknown: 2, SQLMethodEstimated: 3}[m]
}
