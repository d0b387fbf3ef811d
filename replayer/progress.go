package replayer

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// LateAfter is how far behind its intended start a request of the open or
// as-recorded model, held back because every worker was busy, may be sent
// before it counts as late (Stats.Late).
const LateAfter = 10 * time.Millisecond

// Stats sums up one call of Run or Explain.
type Stats struct {
	// Phase and Slice are the plan's.
	Phase string
	Slice int
	// Model is "open", "recorded", "closed" or "explain".
	Model string
	// Started and Ended bound the call.
	Started, Ended time.Time
	// Requests counts the results given to the sink, NotSent included.
	Requests int64
	// Failures counts results that failed (snapshots.Result.Failed),
	// NotSent included.
	Failures int64
	// NotSent counts open-model requests that could not be sent before the
	// end of the run plus the timeout because the target held every
	// connection (error "not sent: target stalled").
	NotSent int64
	// Late counts open-model requests sent more than LateAfter after their
	// intended start because every worker (MaxInFlight) was busy with the
	// target; MaxLate is the largest delay. Lateness of the generator itself
	// (a starved CPU) is not counted here; it still shows in the latency,
	// which runs from the intended start.
	Late    int64
	MaxLate time.Duration
	// MaxInFlight is the most requests in flight at once.
	MaxInFlight int64
	// WaitedForSource counts requests that waited for the replayed answer
	// a value of theirs comes from (StateConfig.Correlate): a dependent
	// request is sent late, never with a stale value. MaxWaitForSource is
	// the longest wait. In the open and as-recorded models such a request
	// starts that much after its intended start.
	WaitedForSource  int64
	MaxWaitForSource time.Duration
}

// Progress is a snapshot of a running call, for a live progress line.
type Progress struct {
	Phase string
	Slice int
	// Elapsed is the time since the call started; Remaining the time left
	// when the plan has a duration, else zero.
	Elapsed, Remaining time.Duration
	// Done and Total count requests; Total is zero when the plan is bounded
	// by time only.
	Done, Total int64
	// Rate is Done per second of Elapsed.
	Rate float64
	// Failures counts failed requests so far, NotSent included.
	Failures int64
	// InFlight is the number of requests in flight now.
	InFlight int64
	// Behind is, in the open and as-recorded models, how long the next due
	// request has been waiting for a free connection: non-zero means the
	// target holds every connection (MaxInFlight) and is falling behind.
	Behind time.Duration
	// Late and NotSent are as in Stats.
	Late, NotSent int64
	// Final is set on the last call.
	Final bool
}

// counters accumulate a call's figures from many goroutines.
type counters struct {
	started  time.Time
	requests atomic.Int64
	failures atomic.Int64
	notSent  atomic.Int64
	late     atomic.Int64
	maxLate  atomic.Int64
	inflight atomic.Int64
	maxInfl  atomic.Int64
	behind   atomic.Int64 // intended start (Unix ns) of the request waiting for a worker; 0 when none
}

// record counts a finished result.
func (c *counters) record(res *snapshots.Result) {
	c.requests.Add(1)
	if res.Failed() {
		c.failures.Add(1)
	}
}

// sent counts a request going out late by d (open model).
func (c *counters) sentLate(d time.Duration) {
	if d <= LateAfter {
		return
	}
	c.late.Add(1)
	for {
		m := c.maxLate.Load()
		if int64(d) <= m || c.maxLate.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

func (c *counters) enter() {
	n := c.inflight.Add(1)
	for {
		m := c.maxInfl.Load()
		if n <= m || c.maxInfl.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *counters) leave() { c.inflight.Add(-1) }

func (c *counters) stats(p LoadPlan, model string) Stats {
	return Stats{
		Phase:       p.Phase,
		Slice:       p.Slice,
		Model:       model,
		Started:     c.started,
		Ended:       time.Now(),
		Requests:    c.requests.Load(),
		Failures:    c.failures.Load(),
		NotSent:     c.notSent.Load(),
		Late:        c.late.Load(),
		MaxLate:     time.Duration(c.maxLate.Load()),
		MaxInFlight: c.maxInfl.Load(),
	}
}

func (c *counters) progress(p LoadPlan, duration time.Duration, total int64, final bool) Progress {
	el := time.Since(c.started)
	pr := Progress{
		Phase:    p.Phase,
		Slice:    p.Slice,
		Elapsed:  el,
		Done:     c.requests.Load(),
		Total:    total,
		Failures: c.failures.Load(),
		InFlight: c.inflight.Load(),
		Late:     c.late.Load(),
		NotSent:  c.notSent.Load(),
		Final:    final,
	}
	if b := c.behind.Load(); b != 0 {
		pr.Behind = max(time.Since(time.Unix(0, b)), 0)
	}
	if duration > 0 && el < duration {
		pr.Remaining = duration - el
	}
	if el > 0 {
		pr.Rate = float64(pr.Done) / el.Seconds()
	}
	return pr
}

// reporter calls p.Progress as the call starts, periodically until
// stopped, and once more at the end.
type reporter struct {
	stop chan struct{}
	wg   sync.WaitGroup
	fn   func(final bool)
}

func startReporter(p LoadPlan, c *counters, duration time.Duration, total int64) *reporter {
	r := &reporter{stop: make(chan struct{})}
	if p.Progress == nil {
		return r
	}
	r.fn = func(final bool) { p.Progress(c.progress(p, duration, total, final)) }
	r.fn(false) // at once: a watcher learns of the call as it starts
	every := p.ProgressInterval
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.fn(false)
			}
		}
	}()
	return r
}

// end stops the reporter and sends the final progress.
func (r *reporter) end() {
	close(r.stop)
	r.wg.Wait()
	if r.fn != nil {
		r.fn(true)
	}
}
