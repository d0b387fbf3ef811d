package report

import (
	"math"

	"github.com/replaykit/replay/analyzer"
)

// LongerRunDocument estimates, when most endpoints were inconclusive, how
// long a run would likely settle them at the noise this one saw (JSON
// "longer_run"; analyzer.LongerRun). A factor beyond 25× is absent: a
// quieter machine helps more than a longer run.
type LongerRunDocument struct {
	Inconclusive int     `json:"inconclusive"`
	Endpoints    int     `json:"endpoints"`
	RanS         float64 `json:"ran_s"`
	// HalfFactor and HalfS: the load per side (× this run's, and seconds)
	// that would likely settle half of the inconclusive endpoints; AllFactor
	// and AllS all of them.
	HalfFactor *float64 `json:"half_factor,omitempty"`
	HalfS      *float64 `json:"half_s,omitempty"`
	AllFactor  *float64 `json:"all_factor,omitempty"`
	AllS       *float64 `json:"all_s,omitempty"`
}

// longerRunDoc is the JSON of c.Longer; nil without one.
func longerRunDoc(c *analyzer.Comparison) *LongerRunDocument {
	l := c.Longer
	if l == nil {
		return nil
	}
	d := &LongerRunDocument{Inconclusive: l.Inconclusive, Endpoints: l.Endpoints, RanS: round(l.Ran.Seconds(), 3)}
	if !math.IsInf(l.Half, 1) {
		d.HalfFactor, d.HalfS = ptr(round(l.Half, 2)), ptr(round(l.Half*l.Ran.Seconds(), 1))
	}
	if !math.IsInf(l.All, 1) {
		d.AllFactor, d.AllS = ptr(round(l.All, 2)), ptr(round(l.All*l.Ran.Seconds(), 1))
	}
	return d
}
