package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// recorder is an Observer that notes what it is told.
type recorder struct {
	mu       sync.Mutex
	started  []Watch
	results  map[string]int
	phases   []string // side phase, each change
	finished []Outcome
	after    int // results told after Finish
	startErr error
}

func (r *recorder) Start(_ context.Context, w Watch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, w)
	r.results = map[string]int{}
	return r.startErr
}

func (r *recorder) Result(side string, res *snapshots.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.results[side+" "+res.Phase]++
	if len(r.finished) > 0 {
		r.after++
	}
}

func (r *recorder) Progress(p replayer.CompareProgress) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := p.Side + " " + p.Phase
	if len(r.phases) == 0 || r.phases[len(r.phases)-1] != s {
		r.phases = append(r.phases, s)
	}
}

func (r *recorder) Finish(o Outcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.finished = append(r.finished, o)
}

// TestObserverOfARun: the observer is started once, told every explain and
// load result the run file holds, the phases as they come, and the report
// at the end, after the last result.
func TestObserverOfARun(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	defer srv.Close()
	obs := &recorder{}
	res, err := Run(context.Background(), RunConfig{
		Config: Config{Inbound: inbound("/a", "/b"), Observer: obs},
		Side:   SideConfig{Name: "run", URL: srv.URL, RunPath: filepath.Join(t.TempDir(), "x.run")},
		Plan:   replayer.LoadPlan{VUs: 1, Duration: 300 * time.Millisecond, Explain: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.started) != 1 || obs.started[0].Command != "run" || !slices.Equal(obs.started[0].Sides, []string{"run"}) {
		t.Errorf("started %+v; want once, for the run's side", obs.started)
	}
	load := res.Report.Summary.Overall.Requests
	if obs.results["run explain"] != 2 || int64(obs.results["run load"]) != load || int64(2+2+load) != served.Load() {
		t.Errorf("told %v; the run has %d load requests after 2 explain ones (each after a warm-up request), the app served %d", obs.results, load, served.Load())
	}
	if want := []string{"run explain", "run load"}; !slices.Equal(obs.phases, want) {
		t.Errorf("phases %q; want %q", obs.phases, want)
	}
	if len(obs.finished) != 1 || obs.finished[0].Run != res.Report || obs.finished[0].Err != nil || obs.after != 0 {
		t.Errorf("finished %+v (%d results after); want once with the report, after every result", obs.finished, obs.after)
	}
}

// TestObserverOfACompare: the observer of a comparison sees both sides'
// explain and load results, the resets and the phases of each side, and
// the comparison's report with its directory.
func TestObserverOfACompare(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	obs := &recorder{}
	dir := t.TempDir()
	res, err := Compare(context.Background(), CompareConfig{
		Config:    Config{Inbound: inbound("/a"), Observer: obs},
		Baseline:  SideConfig{Name: "baseline", URL: srv.URL},
		Candidate: SideConfig{Name: "candidate", URL: srv.URL},
		Dir:       dir,
		Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 1, Duration: 400 * time.Millisecond}, Slices: 2, Explain: 1, Warmup: 50 * time.Millisecond},
		Reset:     "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.started) != 1 || !slices.Equal(obs.started[0].Sides, []string{"baseline", "candidate"}) || obs.started[0].Command != "compare" {
		t.Errorf("started %+v", obs.started)
	}
	want := []string{
		"baseline reset", "baseline explain", "candidate reset", "candidate explain",
		"baseline warmup", "candidate warmup", " reset",
		"baseline load", "candidate load", // pair 1, then pair 2 the other way round
		"baseline load",
	}
	if !slices.Equal(obs.phases, want) {
		t.Errorf("phases\n%q\nwant\n%q", obs.phases, want)
	}
	for _, side := range []string{"baseline", "candidate"} {
		if obs.results[side+" explain"] != 1 || obs.results[side+" load"] == 0 || obs.results[side+" warmup"] != 0 {
			t.Errorf("%s: told %v; want its explain and load results, not the warmup's", side, obs.results)
		}
	}
	if len(obs.finished) != 1 || obs.finished[0].Comparison != res.Report || obs.finished[0].Dir != dir {
		t.Errorf("finished %+v; want the report and %s", obs.finished, dir)
	}
}

// TestObserverStartFails: an observer that cannot start (a dashboard whose
// port is taken) stops the session before any request, and is not told a
// finish.
func TestObserverStartFails(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	defer srv.Close()
	obs := &recorder{startErr: errors.New("dashboard: address in use")}
	_, err := Run(context.Background(), RunConfig{
		Config: Config{Inbound: inbound("/a"), Observer: obs},
		Side:   SideConfig{Name: "run", URL: srv.URL, RunPath: filepath.Join(t.TempDir(), "x.run")},
		Plan:   replayer.LoadPlan{Iterations: 1},
	})
	if err == nil || err.Error() != "run: dashboard: address in use" || served.Load() != 0 || len(obs.finished) != 0 {
		t.Errorf("err %v, %d served, finished %v; want the observer's error before any request", err, served.Load(), obs.finished)
	}
}

// TestNoObserverWrapsNothing: without an observer the replayer gets the
// run file's sink itself and the plan's own progress: nothing is added on
// the path of a result.
func TestNoObserverWrapsNothing(t *testing.T) {
	var sink replayer.ResultSink = &summarySink{}
	if got := observe(sink, nil, "x"); got != sink {
		t.Errorf("observe without an observer = %T; want the sink itself", got)
	}
	plan := replayer.ComparePlan{}
	observeCompare(&plan, nil)
	lp := replayer.LoadPlan{}
	observeRun(&lp, nil, "x")
	if plan.Progress != nil || plan.Reset != nil || lp.Progress != nil {
		t.Error("progress or reset wrapped without an observer")
	}
	// The sink copies results, so the wrapper says so too (an observer
	// keeps none); a sink that keeps them is wrapped as one that does.
	got := observe(sink, &recorder{}, "x")
	if _, copies := got.(replayer.ResultCopier); fmt.Sprintf("%T", got) != "session.observedCopier" || !copies {
		t.Errorf("observe with an observer = %T; want it wrapped, copying results", got)
	}
	var keeper replayer.ResultSink = &snapshotsKeeper{}
	if _, copies := observe(keeper, &recorder{}, "x").(replayer.ResultCopier); copies {
		t.Error("a sink that keeps results wrapped as one that copies them")
	}
}

// snapshotsKeeper keeps the results it is given.
type snapshotsKeeper struct{ kept []*snapshots.Result }

func (k *snapshotsKeeper) Add(r *snapshots.Result) { k.kept = append(k.kept, r) }
