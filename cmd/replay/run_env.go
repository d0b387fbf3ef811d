package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// loadExchanges reads the snapshot's inbound exchanges, and its outbound
// ones when they are to be mocked; op ("run", "compare") prefixes errors.
func loadExchanges(ctx context.Context, op, path string, outboundToo bool) (inbound, outbound []*snapshots.Exchange, err error) {
	snap, err := snapshots.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", op, err)
	}
	defer snap.Close()
	for e, err := range snap.Exchanges(ctx, snapshots.Filter{}) {
		if err != nil {
			return nil, nil, fmt.Errorf("%s: read %s: %w", op, path, err)
		}
		switch {
		case e.Direction == snapshots.Inbound:
			inbound = append(inbound, e)
		case outboundToo:
			outbound = append(outbound, e)
		}
	}
	if len(inbound) == 0 {
		return nil, nil, fmt.Errorf("%s: %s holds no inbound requests to replay", op, path)
	}
	return inbound, outbound, nil
}

// runEnvironment is what replay runs around the build: the mock, the SQL
// counter, the build itself.
type runEnvironment struct {
	harness
	build *replayer.Process
}

func startRunEnvironment(ctx context.Context, opts *runOptions, su *runSetup, outbound []*snapshots.Exchange) (*runEnvironment, error) {
	env := &runEnvironment{}
	ok := false
	defer func() {
		if !ok {
			env.close()
		}
	}()
	if len(opts.mocks) > 0 {
		c, err := ca.LoadOrCreate(opts.caDir)
		if err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
		var services []string
		for _, m := range opts.mocks {
			if m != "all" {
				services = append(services, m)
			}
		}
		if err := env.startMock(outbound, services, opts.onMiss, opts.mockTiming, c, opts.mockListen); err != nil {
			return nil, fmt.Errorf("run: mock: %w", err)
		}
		if env.wiring.CABundle, err = c.BundlePath(); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	if su.pgServer != "" {
		if err := env.startSQLCounter(ctx, su.pgServer, su.pgListen, &opts.pgTLS, opts.caDir); err != nil {
			return nil, fmt.Errorf("run: sqlcount: %w", err)
		}
	}
	ok = true
	return env, nil
}

// close stops the build (if still running), the mock and the SQL counter.
func (env *runEnvironment) close() {
	if env.build != nil {
		env.build.Stop()
	}
	env.harness.close()
}

// runSummarySink writes results to the run file and feeds them to the
// analyzer as they come.
type runSummarySink struct {
	rw   *snapshots.RunWriter
	ch   chan *snapshots.Result
	done chan struct{}
	sum  *analyzer.Summary
	err  error
}

func newRunSummarySink(ctx context.Context, rw *snapshots.RunWriter, info snapshots.RunInfo) *runSummarySink {
	s := &runSummarySink{rw: rw, ch: make(chan *snapshots.Result, 4096), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		results := func(yield func(*snapshots.Result, error) bool) {
			for r := range s.ch {
				if !yield(r, nil) {
					break
				}
			}
			for range s.ch { // the analyzer stopped: keep the replayer from blocking
			}
		}
		s.sum, s.err = analyzer.Summarize(context.WithoutCancel(ctx), info, results, analyzer.SummarizeOptions{})
	}()
	return s
}

func (s *runSummarySink) Add(r *snapshots.Result) {
	s.rw.Add(r)
	s.ch <- r
}

// summary ends the stream and returns the summary.
func (s *runSummarySink) summary() (*analyzer.Summary, error) {
	close(s.ch)
	<-s.done
	return s.sum, s.err
}

// runProgress draws a live one-line progress display on a terminal.
type runProgress struct {
	w    io.Writer
	last time.Time
}

func newRunProgress(w io.Writer) *runProgress { return &runProgress{w: w} }

func (pl *runProgress) update(p replayer.Progress) {
	var b strings.Builder
	fmt.Fprintf(&b, "\r\033[K%-7s %6.1fs", p.Phase, p.Elapsed.Seconds())
	if p.Remaining > 0 {
		fmt.Fprintf(&b, " (%.1fs left)", p.Remaining.Seconds())
	}
	if p.Total > 0 {
		fmt.Fprintf(&b, "  %d/%d requests", p.Done, p.Total)
	} else {
		fmt.Fprintf(&b, "  %d requests", p.Done)
	}
	fmt.Fprintf(&b, "  %.0f/s  %d failed  %d in flight", p.Rate, p.Failures, p.InFlight)
	if p.Behind > 0 {
		fmt.Fprintf(&b, "  target stalled: %s behind", p.Behind.Round(time.Millisecond))
	}
	if p.Late > 0 || p.NotSent > 0 {
		fmt.Fprintf(&b, "  %d late, %d not sent", p.Late, p.NotSent)
	}
	io.WriteString(pl.w, b.String())
}

func (pl *runProgress) clear() { io.WriteString(pl.w, "\r\033[K") }

// runLoadDescription describes a plan in words for reports, e.g. "closed
// model, 8 VUs, for 30s".
func runLoadDescription(p replayer.LoadPlan) string {
	var parts []string
	switch p.Model() {
	case "open":
		parts = append(parts, "open model, "+p.Rate.String())
	case "recorded":
		parts = append(parts, "as recorded, speed "+strconv.FormatFloat(p.Speed, 'g', -1, 64)+"×")
	default:
		if len(p.Stages) > 0 {
			var st []string
			for _, x := range p.Stages {
				st = append(st, x.String())
			}
			parts = append(parts, "closed model, stages "+strings.Join(st, " "))
		} else {
			parts = append(parts, fmt.Sprintf("closed model, %s", runPlural(max(p.VUs, 1), "VU")))
		}
	}
	if p.Iterations > 0 || (p.Duration == 0 && len(p.Stages) == 0) {
		parts = append(parts, runPlural(max(p.Iterations, 1), "iteration"))
	}
	if p.Duration > 0 {
		parts = append(parts, "for "+p.Duration.String())
	}
	return strings.Join(parts, ", ")
}

// runPlural formats n things, e.g. "1 VU", "2 iterations".
func runPlural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}
