package analyzer

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// How an SQL figure was found (SQLEstimate.Method, SQLStats.Method).
const (
	// SQLMethodExact: every statement that ran while the requests were in
	// flight was attributed to a request (sqlcommenter, a request alone in
	// flight, or the request that owned the connection's transaction).
	SQLMethodExact = "exact"
	// SQLMethodEstimated: statements that could not be attributed were
	// shared out by least squares over windows of time (EstimateSQL); the
	// figure comes with a margin.
	SQLMethodEstimated = "estimated"
	// SQLMethodUnknown: statements ran that could not be attributed and
	// could not be shared out; the figure is a lower bound.
	SQLMethodUnknown = "unknown"
	// SQLMethodNotCounted: no statement was captured at all (a snapshot
	// recorded without --postgres or --mysql): there is no figure, not a
	// zero.
	SQLMethodNotCounted = "not counted"
)

// SQLEstimate is the statements per request of one group of requests.
type SQLEstimate struct {
	// Key names the group (SQLSpan.Key).
	Key string
	// Requests counts the group's requests; Attributed the statements
	// attributed to them exactly.
	Requests, Attributed int64
	// PerRequest is the best figure: Attributed/Requests plus the share of
	// the unattributed statements estimated for one request.
	PerRequest float64
	// Margin is the half-width of PerRequest's 95% interval; zero when
	// Method is SQLMethodExact.
	Margin float64
	// Method is SQLMethodExact, SQLMethodEstimated or SQLMethodUnknown.
	Method string
}

// maxEstimateCells bounds windows × groups of the least-squares problem;
// longer recordings get wider windows.
const maxEstimateCells = 4 << 20

// EstimateSQL works out the statements per request of each group of spans
// (endpoints, say), one SQLEstimate per group in order of first
// appearance. The statements attributed to a span count exactly; those in
// unattributed (which the counter could attribute to no request) are
// shared out under a model: over a window of time, the unattributed
// statements that started in it are Σ over groups of (the fraction of each
// of the group's requests that lies in the window) × (the group's
// unattributed statements per request). Windows are as wide as the median
// request; the rates are the non-negative weighted least-squares solution
// over all windows, each weighted by 1/(requests in it), as for counts whose
// variance grows with the load (with a single group this is exactly the
// unattributed statements divided by the requests). A group none of whose
// requests was in flight when an unattributed statement started is exact.
func EstimateSQL(spans []snapshots.SQLSpan, unattributed snapshots.SQLHistogram) []SQLEstimate {
	var ests []SQLEstimate
	index := map[string]int{}
	for _, s := range spans {
		g, ok := index[s.Key]
		if !ok {
			g = len(ests)
			index[s.Key] = g
			ests = append(ests, SQLEstimate{Key: s.Key, Method: SQLMethodExact})
		}
		ests[g].Requests++
		ests[g].Attributed += s.Statements
	}
	for i := range ests {
		ests[i].PerRequest = float64(ests[i].Attributed) / float64(ests[i].Requests)
	}
	times, counts := statementTimes(unattributed)
	if len(times) == 0 {
		return ests
	}
	// The groups that overlap an unattributed statement are the columns.
	col := make([]int, len(ests))
	for i := range col {
		col[i] = -1
	}
	var cols []int
	for _, s := range spans {
		g := index[s.Key]
		if col[g] >= 0 {
			continue
		}
		i := sort.Search(len(times), func(i int) bool { return times[i] >= s.Start.UnixNano() })
		if i < len(times) && times[i] <= s.End.UnixNano() {
			col[g] = len(cols)
			cols = append(cols, g)
		}
	}
	if len(cols) == 0 {
		return ests
	}
	rate, margin := leastSquares(spans, index, col, len(cols), times, counts, unattributed.Bin)
	for j, g := range cols {
		e := &ests[g]
		if math.IsNaN(rate[j]) {
			e.Method = SQLMethodUnknown
			continue
		}
		e.Method = SQLMethodEstimated
		e.PerRequest += rate[j]
		e.Margin = margin[j]
	}
	return ests
}

// statementTimes returns the middle of each interval of h, in Unix
// nanoseconds and in order, with its count.
func statementTimes(h snapshots.SQLHistogram) (times, counts []int64) {
	if h.Bin <= 0 {
		return nil, nil
	}
	keys := make([]int64, 0, len(h.Counts))
	for k, n := range h.Counts {
		if n > 0 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		times = append(times, k*int64(h.Bin)+int64(h.Bin)/2)
		counts = append(counts, h.Counts[k])
	}
	return times, counts
}

// leastSquares solves for the unattributed statements per request of the
// k groups with a column (col[group] >= 0). It returns NaN for a group it
// cannot estimate; margins are 95% half-widths from the residuals.
func leastSquares(spans []snapshots.SQLSpan, index map[string]int, col []int, k int, times, counts []int64, bin time.Duration) (rate, margin []float64) {
	t0, t1, width := estimateWindows(spans, index, col, k, bin)
	nb := int((t1-t0)/width + 1)
	x := windowLoads(spans, index, col, k, t0, width, nb)
	y := windowCounts(times, counts, t0, t1, width, nb)
	A, c, rows := normalEquations(x, y, k, nb)
	rate = nnls(A, c, k)
	rss := residualSquares(x, y, rate, k, nb)
	margin = rateMargins(A, rate, rss, rows, k)
	return rate, margin
}

// estimateWindows returns the columned spans' time range and a median-request window width within maxEstimateCells.
func estimateWindows(spans []snapshots.SQLSpan, index map[string]int, col []int, k int, bin time.Duration) (t0, t1, width int64) {
	t0, t1 = math.MaxInt64, math.MinInt64
	var durs []int64
	for _, s := range spans {
		if col[index[s.Key]] < 0 {
			continue
		}
		t0 = min(t0, s.Start.UnixNano())
		t1 = max(t1, s.End.UnixNano())
		durs = append(durs, max(s.End.Sub(s.Start).Nanoseconds(), 0))
	}
	slices.Sort(durs)
	width = max(durs[len(durs)/2], int64(bin), int64(time.Microsecond))
	for (t1-t0)/width+1 > int64(maxEstimateCells/k) {
		width *= 2
	}
	return t0, t1, width
}

// windowLoads returns x[b*k+j]: the fraction-weighted requests of column j in flight in window b.
func windowLoads(spans []snapshots.SQLSpan, index map[string]int, col []int, k int, t0, width int64, nb int) []float64 {
	x := make([]float64, nb*k) // x[b*k+j]: requests of column j in window b
	for _, s := range spans {
		j := col[index[s.Key]]
		if j < 0 {
			continue
		}
		a, z := s.Start.UnixNano()-t0, s.End.UnixNano()-t0
		if z <= a {
			x[int(a/width)*k+j]++
			continue
		}
		for b := a / width; b <= z/width && b < int64(nb); b++ {
			lo, hi := max(a, b*width), min(z, (b+1)*width)
			if hi > lo {
				x[int(b)*k+j] += float64(hi-lo) / float64(z-a)
			}
		}
	}
	return x
}

// windowCounts returns y[b]: the unattributed statements that started in window b.
func windowCounts(times, counts []int64, t0, t1, width int64, nb int) []float64 {
	y := make([]float64, nb)
	for i, t := range times {
		if t >= t0 && t <= t1 {
			y[(t-t0)/width] += float64(counts[i])
		}
	}
	return y
}

// normalEquations builds A·rate = c for the 1/load-weighted problem and counts the loaded windows.
func normalEquations(x, y []float64, k, nb int) (A, c []float64, rows int) {
	A = make([]float64, k*k)
	c = make([]float64, k)
	for b := range nb {
		xb := x[b*k : (b+1)*k]
		load := 0.0
		for _, v := range xb {
			load += v
		}
		if load == 0 {
			continue // statements with no request in flight are background
		}
		rows++
		w := 1 / load
		for i, vi := range xb {
			if vi == 0 {
				continue
			}
			c[i] += w * vi * y[b]
			for j, vj := range xb {
				A[i*k+j] += w * vi * vj
			}
		}
	}
	return A, c, rows
}

// residualSquares returns the 1/load-weighted residual sum of squares of rate.
func residualSquares(x, y, rate []float64, k, nb int) float64 {
	rss := 0.0
	for b := range nb {
		xb := x[b*k : (b+1)*k]
		load, pred := 0.0, 0.0
		for j, v := range xb {
			load += v
			pred += v * rate[j]
		}
		if load > 0 {
			rss += (y[b] - pred) * (y[b] - pred) / load
		}
	}
	return rss
}

// rateMargins returns each rate's 95% half-width and sets to NaN the rates of columns with no load.
func rateMargins(A, rate []float64, rss float64, rows, k int) []float64 {
	var active []int
	for j := range k {
		if rate[j] > 0 {
			active = append(active, j)
		}
	}
	margin := make([]float64, k)
	dof := rows - len(active)
	inv := invertSub(A, k, active)
	for j := range k {
		if A[j*k+j] == 0 {
			rate[j] = math.NaN()
			continue
		}
		v := math.NaN()
		if dof > 0 {
			s2 := rss / float64(dof)
			v = s2 / A[j*k+j] // a rate at zero: how far it could rise alone
			if p := slices.Index(active, j); p >= 0 && inv != nil {
				v = s2 * inv[p*len(active)+p]
			}
		}
		switch {
		case math.IsNaN(v) || v < 0:
			margin[j] = rate[j] // no residuals to judge by: as large as the share
		default:
			margin[j] = 1.96 * math.Sqrt(v)
		}
	}
	return margin
}

// nnls minimizes ½bᵀAb − cᵀb over b ≥ 0 (A symmetric positive semidefinite,
// k×k) by projected Gauss–Seidel.
func nnls(A, c []float64, k int) []float64 {
	b := make([]float64, k)
	iters := max(200, min(100000, 20000000/(k*k)))
	for range iters {
		moved, size := 0.0, 0.0
		for j := range k {
			d := A[j*k+j]
			if d == 0 {
				continue
			}
			s := c[j]
			for i := range k {
				if i != j {
					s -= A[j*k+i] * b[i]
				}
			}
			v := max(s/d, 0)
			moved = max(moved, math.Abs(v-b[j]))
			size = max(size, math.Abs(v))
			b[j] = v
		}
		if moved <= 1e-12*(1+size) {
			break
		}
	}
	return b
}

// invertSub inverts A restricted to the rows and columns in idx (A is k×k),
// by Gauss–Jordan elimination; nil when singular.
func invertSub(A []float64, k int, idx []int) []float64 {
	n := len(idx)
	if n == 0 {
		return nil
	}
	m := make([]float64, n*2*n)
	for r, i := range idx {
		for c, j := range idx {
			m[r*2*n+c] = A[i*k+j]
		}
		m[r*2*n+n+r] = 1
	}
	for p := range n {
		best := p
		for r := p + 1; r < n; r++ {
			if math.Abs(m[r*2*n+p]) > math.Abs(m[best*2*n+p]) {
				best = r
			}
		}
		if math.Abs(m[best*2*n+p]) < 1e-300 {
			return nil
		}
		for c := range 2 * n {
			m[p*2*n+c], m[best*2*n+c] = m[best*2*n+c], m[p*2*n+c]
		}
		piv := m[p*2*n+p]
		for c := range 2 * n {
			m[p*2*n+c] /= piv
		}
		for r := range n {
			if r == p || m[r*2*n+p] == 0 {
				continue
			}
			f := m[r*2*n+p]
			for c := range 2 * n {
				m[r*2*n+c] -= f * m[p*2*n+c]
			}
		}
	}
	inv := make([]float64, n*n)
	for r := range n {
		copy(inv[r*n:(r+1)*n], m[r*2*n+n:(r+1)*2*n])
	}
	return inv
}

// ShareUnattributedSQL shares h, the statements the counter could not
// attribute (snapshots.RunInfo.UnattributedSQL), out over the load requests
// in flight when they ran (EstimateSQL), and sets each endpoint's
// EstimatedSQL and SQL and the overall SQL accordingly. Summarize calls it
// with the run's info; a caller that summarized results as they came calls
// it again once the counter's histogram is complete. An empty h leaves the
// exact figures.
func (s *Summary) ShareUnattributedSQL(h snapshots.SQLHistogram) {
	ests := map[string]SQLEstimate{}
	if h.Total() > 0 && s.Overall != nil {
		for _, e := range EstimateSQL(s.Overall.spans, h) {
			ests[e.Key] = e
		}
	}
	for _, es := range s.Endpoints {
		es.EstimatedSQL = es.loadAll
		if est, ok := ests[es.Endpoint]; ok && es.loadAll.Counted() {
			es.EstimatedSQL.share(est)
		}
		es.chooseSQL()
	}
	if s.Overall != nil {
		s.Overall.SQL = weightedSQL(s.Endpoints)
	}
}

// chooseSQL sets SQL, the preferred view: the explain phase's, else the
// load phase's when it counted every request, else EstimatedSQL when
// there is one, else what the load phase counted.
func (e *EndpointSummary) chooseSQL() {
	e.SQL = e.LoadSQL
	switch {
	case e.ExplainSQL.Counted():
		e.SQL = e.ExplainSQL
	case e.EstimatedSQL.Counted() && e.LoadSQL.Requests < e.Requests:
		e.SQL = e.EstimatedSQL
	}
}

// share applies an estimate to figures over every load request.
func (s *SQLStats) share(est SQLEstimate) {
	if est.Method != SQLMethodEstimated && est.Method != SQLMethodUnknown {
		return
	}
	s.Source = SQLSourceLoadEstimate
	s.Method = est.Method
	s.PerRequest = est.PerRequest
	s.Margin = est.Margin
	s.Statements = int64(math.Round(est.PerRequest * float64(s.Requests)))
	// The fingerprints and database time of attributed statements only
	// would read as the whole.
	s.Fingerprints = nil
	s.DBTimePerRequest = 0
}
