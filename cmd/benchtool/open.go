package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os/exec"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// The requirement of issue 12 on the open model: latency from the intended
// start adds at most this much over the service time.
const (
	addedP50Goal = 0.1 // ms
	addedP99Goal = 1.0 // ms
)

// openFigures are one open-model run's latencies, in milliseconds. For
// replay, p50/p99 run from the intended start and service time from the
// actual send; vegeta measures from its actual send only (hasService is
// false).
type openFigures struct {
	ok             bool
	p50, p99       float64
	hasService     bool
	svcP50, svcP99 float64
	// addP50 and addP99 are the latency the generator adds over the
	// service time: the difference of the percentiles, as the requirement
	// reads.
	addP50, addP99 float64
	// lagP50 and lagP99 are percentiles of the send lag: actual send minus
	// intended start, request by request.
	lagP50, lagP99       float64
	failed               int64
	cpuPerReq, reqPerSec float64
}

// replayOpenFigures reads a replay run file: latency and service time as
// replay's own summary reports them, and the send lag of every result.
func replayOpenFigures(path string) (openFigures, error) {
	run, err := snapshots.OpenRun(path)
	if err != nil {
		return openFigures{}, err
	}
	defer run.Close()
	s, err := analyzer.SummarizeRun(context.Background(), run, analyzer.SummarizeOptions{})
	if err != nil {
		return openFigures{}, err
	}
	var lag []time.Duration
	for res, err := range run.Results(context.Background()) {
		if err != nil {
			return openFigures{}, err
		}
		if res.Phase == snapshots.PhaseLoad && !res.Failed() {
			lag = append(lag, res.Sent.Sub(res.Intended))
		}
	}
	o := s.Overall
	return openFigures{
		ok: true, p50: o.Latency.P50, p99: o.Latency.P99,
		hasService: true, svcP50: o.ServiceTime.P50, svcP99: o.ServiceTime.P99,
		addP50: o.Latency.P50 - o.ServiceTime.P50, addP99: o.Latency.P99 - o.ServiceTime.P99,
		lagP50: quantileMs(lag, 0.50), lagP99: quantileMs(lag, 0.99),
		failed: o.Failed,
	}, nil
}

// quantileMs is the q-quantile of d (nearest rank) in milliseconds; it sorts
// d.
func quantileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return math.NaN()
	}
	slices.Sort(d)
	i := max(int(math.Ceil(q*float64(len(d))))-1, 0)
	return float64(d[i]) / float64(time.Millisecond)
}

// vegetaOpenFigures reads vegeta's results file with `vegeta report`.
func vegetaOpenFigures(vegeta, path string) (openFigures, error) {
	out, err := exec.Command(vegeta, "report", "-type=json", path).Output()
	if err != nil {
		return openFigures{}, fmt.Errorf("vegeta report: %w", err)
	}
	var rep struct {
		Latencies struct {
			P50 float64 `json:"50th"`
			P99 float64 `json:"99th"`
		} `json:"latencies"`
		Requests int64   `json:"requests"`
		Success  float64 `json:"success"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return openFigures{}, fmt.Errorf("vegeta report: %w", err)
	}
	failed := rep.Requests - int64(math.Round(rep.Success*float64(rep.Requests)))
	return openFigures{ok: true, p50: rep.Latencies.P50 / 1e6, p99: rep.Latencies.P99 / 1e6, failed: failed}, nil
}

// line is one round's figures on one line, for stderr as the rounds go.
func (f openFigures) line() string {
	if !f.ok {
		return ""
	}
	s := fmt.Sprintf("p50 %.3fms p99 %.3fms", f.p50, f.p99)
	if f.hasService {
		s = fmt.Sprintf("from intended start %s; service p50 %.3fms p99 %.3fms; added p50 %+.3fms p99 %+.3fms; send lag p50 %.3fms p99 %.3fms",
			s, f.svcP50, f.svcP99, f.addP50, f.addP99, f.lagP50, f.lagP99)
	}
	return fmt.Sprintf("%s; failed %d", s, f.failed)
}

// openRow is one line of the open-model table.
type openRow struct {
	label, gen string
	f          openFigures
}

// printOpenTable prints the open-model figures of every round and their
// medians, and whether replay meets the requirement.
func printOpenTable(w io.Writer, o compareOptions, gens []generator, results [][]measurement) error {
	var rows, medians []openRow
	for i, g := range gens {
		if g.model != "open" {
			continue
		}
		var fs []openFigures
		for round, m := range results[i] {
			f := m.open
			f.reqPerSec = float64(m.requests) / o.dur.Seconds()
			if m.cpu > 0 && m.requests > 0 {
				f.cpuPerReq = float64(m.cpu.Microseconds()) / float64(m.requests)
			}
			rows = append(rows, openRow{fmt.Sprintf("round %d", round+1), g.name, f})
			fs = append(fs, f)
		}
		medians = append(medians, openRow{"median", g.name, medianFigures(fs)})
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nOpen model at %d/s, latency in ms: replay's from the intended start, its service time from the actual send,\n", o.rate)
	fmt.Fprintf(w, "added = latency − service time (at the same percentile); vegeta's latency is from its own actual send.\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\tgenerator\treq/s\tCPU µs/req\tp50\tp99\tservice p50\tservice p99\tadded p50\tadded p99\tsend lag p50\tsend lag p99\tfailed\t")
	for _, r := range append(rows, medians...) {
		fmt.Fprintln(tw, r.cells())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, m := range medians {
		if m.f.hasService {
			fmt.Fprintf(w, "%s, medians: added p50 %.3f ms (goal ≤ %.1f: %s), added p99 %.3f ms (goal ≤ %.1f: %s)\n", m.gen,
				m.f.addP50, addedP50Goal, met(m.f.addP50 <= addedP50Goal), m.f.addP99, addedP99Goal, met(m.f.addP99 <= addedP99Goal))
		}
	}
	return nil
}

func (r openRow) cells() string {
	f := r.f
	if !f.ok {
		return fmt.Sprintf("%s\t%s\t%.0f\t%.1f\t-\t-\t-\t-\t-\t-\t-\t-\t-\t", r.label, r.gen, f.reqPerSec, f.cpuPerReq)
	}
	s := fmt.Sprintf("%s\t%s\t%.0f\t%.1f\t%.3f\t%.3f\t", r.label, r.gen, f.reqPerSec, f.cpuPerReq, f.p50, f.p99)
	if f.hasService {
		s += fmt.Sprintf("%.3f\t%.3f\t%+.3f\t%+.3f\t%.3f\t%.3f\t", f.svcP50, f.svcP99, f.addP50, f.addP99, f.lagP50, f.lagP99)
	} else {
		s += "-\t-\t-\t-\t-\t-\t"
	}
	return s + fmt.Sprintf("%d\t", f.failed)
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// medianFigures takes the median of each figure over the rounds (the
// latencies over the rounds that produced them).
func medianFigures(fs []openFigures) openFigures {
	var ok []openFigures
	for _, f := range fs {
		if f.ok {
			ok = append(ok, f)
		}
	}
	med := func(get func(openFigures) float64) float64 {
		var v []float64
		for _, f := range fs {
			v = append(v, get(f))
		}
		return medianOf(v)
	}
	m := openFigures{
		reqPerSec: med(func(f openFigures) float64 { return f.reqPerSec }),
		cpuPerReq: med(func(f openFigures) float64 { return f.cpuPerReq }),
	}
	if len(ok) == 0 {
		return m
	}
	fs = ok
	m.ok, m.hasService = true, ok[0].hasService
	m.p50, m.p99 = med(func(f openFigures) float64 { return f.p50 }), med(func(f openFigures) float64 { return f.p99 })
	m.svcP50, m.svcP99 = med(func(f openFigures) float64 { return f.svcP50 }), med(func(f openFigures) float64 { return f.svcP99 })
	m.addP50, m.addP99 = med(func(f openFigures) float64 { return f.addP50 }), med(func(f openFigures) float64 { return f.addP99 })
	m.lagP50, m.lagP99 = med(func(f openFigures) float64 { return f.lagP50 }), med(func(f openFigures) float64 { return f.lagP99 })
	m.failed = int64(med(func(f openFigures) float64 { return float64(f.failed) }))
	return m
}

func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
