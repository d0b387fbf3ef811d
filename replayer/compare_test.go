package replayer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

// journal records, in order, the resets and the results of both sides.
type journal struct {
	mu      sync.Mutex
	entries []string
	results map[string][]*snapshots.Result
}

func (j *journal) add(s string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if n := len(j.entries); n == 0 || j.entries[n-1] != s {
		j.entries = append(j.entries, s)
	}
}

func (j *journal) sink(side string) ResultSink {
	return sinkFunc(func(r *snapshots.Result) {
		j.add(fmt.Sprintf("%s %s %d", side, r.Phase, r.Slice))
		j.mu.Lock()
		if j.results == nil {
			j.results = map[string][]*snapshots.Result{}
		}
		j.results[side] = append(j.results[side], r)
		j.mu.Unlock()
	})
}

func (j *journal) reset(_ context.Context, side, phase string) error {
	j.add("reset " + side + " " + phase)
	return nil
}

type sinkFunc func(*snapshots.Result)

func (f sinkFunc) Add(r *snapshots.Result) { f(r) }

func compareSides(t *testing.T, j *journal) (Side, Side, *target, *target) {
	t.Helper()
	hold := func(time.Time) { time.Sleep(time.Millisecond) }
	ta, tb := newTarget(t, hold), newTarget(t, hold)
	a := Side{Name: "baseline", Replayer: newReplayer(t, Config{Target: ta.URL, Exchanges: exchanges(5)}), Sink: j.sink("A")}
	b := Side{Name: "candidate", Replayer: newReplayer(t, Config{Target: tb.URL, Exchanges: exchanges(5)}), Sink: j.sink("B")}
	return a, b, ta, tb
}

func TestCompareInterleavesSlicesInAlternatingOrder(t *testing.T) {
	var j journal
	a, b, ta, _ := compareSides(t, &j)
	var progress []CompareProgress
	var pmu sync.Mutex
	plan := ComparePlan{
		Load:    LoadPlan{VUs: 1, Duration: 400 * time.Millisecond},
		Slices:  4,
		Explain: 1,
		Warmup:  50 * time.Millisecond,
		Reset:   j.reset,
		Progress: func(p CompareProgress) {
			pmu.Lock()
			progress = append(progress, p)
			pmu.Unlock()
		},
	}
	st, err := Compare(context.Background(), plan, a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"reset baseline explain", "A explain 0",
		"reset candidate explain", "B explain 0",
		"reset  load",
		"A load 1", "B load 1", "B load 2", "A load 2", "A load 3", "B load 3", "B load 4", "A load 4",
	}
	if diff := cmp.Diff(want, j.entries); diff != "" {
		t.Errorf("order of resets and results (-want +got):\n%s", diff)
	}
	if st.Slices != 4 {
		t.Errorf("stats say %d slices, want 4", st.Slices)
	}
	for side, s := range map[string]Stats{"A": st.Baseline, "B": st.Candidate} {
		load := 0
		for _, r := range j.results[side] {
			if r.Phase == snapshots.PhaseLoad {
				load++
			}
		}
		if int(s.Requests) != load || load == 0 {
			t.Errorf("side %s: stats count %d load requests, the sink got %d", side, s.Requests, load)
		}
		// The warmup did not move the sequence: the load starts at its
		// first request on both sides.
		var first *snapshots.Result
		for _, r := range j.results[side] {
			if r.Phase == snapshots.PhaseLoad {
				first = r
				break
			}
		}
		if first == nil || first.ExchangeID != 1 || first.Intended.IsZero() {
			t.Errorf("side %s: first load request %+v, want exchange 1, with its intended start", side, first)
		}
	}
	// The warmup reached the target but not the sink.
	if sent, got := len(ta.seen()), len(j.results["A"]); sent <= got {
		t.Errorf("baseline target saw %d requests, its sink %d: the warmup's should be discarded", sent, got)
	}
	phases := map[string]bool{}
	for _, p := range progress {
		phases[p.Side+" "+p.Phase] = true
		if p.Phase == "load" && (p.Slices != 4 || p.Slice < 1 || p.Slice > 4) {
			t.Errorf("progress %+v: want slice 1..4 of 4", p)
		}
	}
	for _, k := range []string{"baseline explain", "candidate explain", "baseline warmup", "candidate warmup", "baseline load", "candidate load"} {
		if !phases[k] {
			t.Errorf("no progress for %q (got %v)", k, phases)
		}
	}
}

func TestCompareSequential(t *testing.T) {
	var j journal
	a, b, _, _ := compareSides(t, &j)
	plan := ComparePlan{Load: LoadPlan{VUs: 2, Duration: 150 * time.Millisecond}, Sequential: true, Slices: 7, Explain: 2, Reset: j.reset}
	st, err := Compare(context.Background(), plan, a, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"reset baseline explain", "A explain 0", "reset baseline load", "A load 0",
		"reset candidate explain", "B explain 0", "reset candidate load", "B load 0",
	}
	if diff := cmp.Diff(want, j.entries); diff != "" {
		t.Errorf("order of resets and results (-want +got):\n%s", diff)
	}
	if st.Slices != 1 {
		t.Errorf("stats say %d slices, want 1 (sequential)", st.Slices)
	}
}

func TestCompareStopsOnAFailedReset(t *testing.T) {
	var j journal
	a, b, _, tb := compareSides(t, &j)
	boom := errors.New("reset: psql exited with status 2")
	plan := ComparePlan{Load: LoadPlan{VUs: 1, Duration: 200 * time.Millisecond}, Explain: 1,
		Reset: func(ctx context.Context, side, phase string) error {
			if side == "candidate" {
				return boom
			}
			return nil
		}}
	_, err := Compare(context.Background(), plan, a, b)
	if !errors.Is(err, boom) {
		t.Fatalf("Compare = %v, want the reset's error", err)
	}
	if n := len(tb.seen()); n != 0 {
		t.Errorf("the candidate got %d requests after its reset failed", n)
	}
	for _, r := range j.results["A"] {
		if r.Phase == snapshots.PhaseLoad {
			t.Fatalf("a load ran after a failed reset: %+v", r)
		}
	}
}

func TestComparePlanErrors(t *testing.T) {
	var j journal
	a, b, ta, tb := compareSides(t, &j)
	tests := []struct {
		name string
		plan ComparePlan
		b    Side
		want string
	}{
		{"no duration", ComparePlan{Load: LoadPlan{VUs: 1}}, b, "positive load duration"},
		{"stages", ComparePlan{Load: LoadPlan{Duration: time.Second, Stages: []Stage{{time.Second, 2}}}}, b, "not stages or speed"},
		{"negative slices", ComparePlan{Load: LoadPlan{Duration: time.Second}, Slices: -1}, b, "slices -1 is negative"},
		{"one replayer", ComparePlan{Load: LoadPlan{Duration: time.Second}}, Side{Name: "candidate", Replayer: a.Replayer, Sink: b.Sink}, "share one Replayer"},
		{"no sink", ComparePlan{Load: LoadPlan{Duration: time.Second}}, Side{Name: "candidate", Replayer: b.Replayer}, `side "candidate" needs a Replayer and a Sink`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compare(context.Background(), tt.plan, a, tt.b)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Compare = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	if len(j.entries) != 0 {
		t.Errorf("invalid plans sent requests: %v", j.entries)
	}
	if n := len(ta.seen()) + len(tb.seen()); n != 0 {
		t.Errorf("invalid plans sent %d requests", n)
	}
}

func TestDefaultSlices(t *testing.T) {
	for d, want := range map[time.Duration]int{time.Second: 10, 3 * time.Second: 10, 15 * time.Second: 15, 20 * time.Second: 20, time.Hour: 20} {
		if got := DefaultSlices(d); got != want {
			t.Errorf("DefaultSlices(%s) = %d, want %d", d, got, want)
		}
	}
}

// TestCompareConcurrent: with Concurrent, each pair's two slices run at
// the same time (every slice of one side overlaps its pair on the other),
// both sides replay the same requests from the first, and a calibrated
// load gives each side half the interleaved rate.
func TestCompareConcurrent(t *testing.T) {
	var j journal
	a, b, _, _ := compareSides(t, &j)
	var calls, inFlight, most int
	var pmu sync.Mutex
	plan := ComparePlan{
		Load: LoadPlan{VUs: 2, Duration: 600 * time.Millisecond}, Slices: 3, Concurrent: true, Calibrate: 0.5,
		Warmup: MinCalibration,
		Progress: func(CompareProgress) {
			pmu.Lock()
			calls++
			inFlight++
			most = max(most, inFlight)
			time.Sleep(time.Millisecond)
			inFlight--
			pmu.Unlock()
		},
	}
	st, err := Compare(context.Background(), plan, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || most != 1 {
		t.Errorf("progress called %d times, %d at once; want calls one at a time", calls, most)
	}
	if want := calibratedRate(st.Throughput * 0.25); st.Rate != want || st.Rate.Count == 0 {
		t.Errorf("rate %v from %.0f/s; want a quarter of it, %v", st.Rate, st.Throughput, want)
	}
	span := map[string]map[int][2]time.Time{"A": {}, "B": {}}
	for side, rs := range j.results {
		for _, r := range rs {
			if r.Phase != snapshots.PhaseLoad {
				continue
			}
			s := span[side][r.Slice]
			if s[0].IsZero() || r.Sent.Before(s[0]) {
				s[0] = r.Sent
			}
			if r.Sent.After(s[1]) {
				s[1] = r.Sent
			}
			span[side][r.Slice] = s
		}
	}
	for i := 1; i <= 3; i++ {
		x, y := span["A"][i], span["B"][i]
		if x[0].IsZero() || y[0].IsZero() || x[0].After(y[1]) || y[0].After(x[1]) {
			t.Errorf("slice %d: baseline's requests %v–%v, candidate's %v–%v: want them at the same time", i, x[0], x[1], y[0], y[1])
		}
	}
	for _, side := range []string{"A", "B"} {
		// The open model's answers come back in any order: the first
		// request is the one meant to start first.
		var first *snapshots.Result
		for _, r := range j.results[side] {
			if r.Phase == snapshots.PhaseLoad && (first == nil || r.Intended.Before(first.Intended)) {
				first = r
			}
		}
		if first == nil || first.ExchangeID != 1 {
			t.Errorf("side %s: first load request %+v, want exchange 1", side, first)
		}
	}
	if err := (ComparePlan{Load: LoadPlan{VUs: 1, Duration: time.Second}, Concurrent: true, Sequential: true}).Validate(); err == nil {
		t.Error("Concurrent and Sequential together: no error")
	}
}
