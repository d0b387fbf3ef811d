package replayer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runShards runs plan p as n shards at once against tg, all starting at one
// T0, and returns each shard's results and final position.
func runShards(t *testing.T, tg *target, n int, p LoadPlan, exchangesN int) ([][]arrival, []int64, time.Time) {
	t.Helper()
	t0 := time.Now().Add(100 * time.Millisecond)
	out := make([][]arrival, n)
	pos := make([]int64, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for k := range n {
		start := func(context.Context) (time.Time, error) { return t0, nil }
		r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(exchangesN), Shard: Shard{K: k, N: n, Start: start}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			var s sink
			_, errs[k] = r.Run(context.Background(), p, &s)
			for _, res := range s.all() {
				out[k] = append(out[k], arrival{res.Intended.Sub(t0), res.ExchangeID})
			}
			pos[k] = r.Position()
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("shard %d/%d: %v", k, n, err)
		}
	}
	return out, pos, t0
}

// arrival is a request's intended start (from the run's start) and the
// recorded exchange it replayed.
type arrival struct {
	At time.Duration
	ID int64
}

func sortArrivals(a []arrival) []arrival {
	slices.SortFunc(a, func(x, y arrival) int {
		if x.At != y.At {
			return int(x.At - y.At)
		}
		return int(x.ID - y.ID)
	})
	return a
}

// Three shards of an iteration-bounded closed plan send, together, exactly
// what one process sends: shard k the positions g with g mod 3 = k.
func TestShardsClosedSendTheWholePlanOnce(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(time.Millisecond) })
	p := LoadPlan{VUs: 6, Iterations: 4}
	got, pos, _ := runShards(t, tg, 3, p, 10)
	for k := range 3 {
		var want, ids []int64
		for g := k; g < 40; g += 3 {
			want = append(want, int64(g%10+1))
		}
		for _, a := range got[k] {
			ids = append(ids, a.ID)
		}
		slices.Sort(want)
		slices.Sort(ids)
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Errorf("shard %d/3 replayed (-want +got):\n%s", k, diff)
		}
		if pos[k] != 40 {
			t.Errorf("shard %d/3 ends at position %d, want the plan's 40", k, pos[k])
		}
	}
	if n := len(tg.seen()); n != 40 {
		t.Errorf("target saw %d requests, want 40", n)
	}
}

// The shards' virtual users add up to the plan's at every step of every
// stage: the closed model's users j run on shard j mod N, and a ramp to T
// runs the users below T.
func TestShardVUsAddUpAtEveryStageStep(t *testing.T) {
	stages := []Stage{{Duration: time.Second, Target: 7}, {Duration: time.Second, Target: 2}, {Duration: 2 * time.Second, Target: 11}}
	p := LoadPlan{VUs: 1, Stages: stages}
	for _, n := range []int{2, 3, 4, 5} {
		var per [][]int
		for k := range n {
			per = append(per, Shard{K: k, N: n}.users(p.maxVUs()))
		}
		for at := time.Duration(0); at <= 4*time.Second; at += 20 * time.Millisecond {
			want := vusAt(p.VUs, stages, at)
			got := 0
			for _, ids := range per {
				for _, j := range ids {
					if j < want {
						got++
					}
				}
			}
			if got != want {
				t.Fatalf("%d shards at %v: %d virtual users, want the plan's %d", n, at, got, want)
			}
		}
	}
}

// Running, the shards hold exactly the plan's users in flight: 6 users on 3
// shards are 2 each, 6 at the target.
func TestShardVUsInFlight(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(30 * time.Millisecond) })
	got, _, _ := runShards(t, tg, 3, LoadPlan{VUs: 6, Duration: 400 * time.Millisecond}, 5)
	if c := tg.maxConcurrency(); c != 6 {
		t.Errorf("target saw at most %d concurrent requests, want the plan's 6", c)
	}
	for k := range 3 {
		// 2 users, each 30 ms a request, for 400 ms: about 26 requests.
		if len(got[k]) < 8 || len(got[k]) > 30 {
			t.Errorf("shard %d/3 sent %d requests, want about 26 (2 users)", k, len(got[k]))
		}
	}
}

// The open model's shards fire their own arrivals at the single schedule's
// times: the union is the single-machine schedule, arrival for arrival.
func TestShardsOpenUnionIsTheSchedule(t *testing.T) {
	tg := newTarget(t, nil)
	p := LoadPlan{Rate: Rate{Count: 200, Per: time.Second}, Duration: 250 * time.Millisecond}
	got, pos, _ := runShards(t, tg, 3, p, 7)
	var union, want []arrival
	for k, a := range got {
		union = append(union, a...)
		for _, x := range a {
			if n := int(x.At / (5 * time.Millisecond)); n%3 != k {
				t.Errorf("shard %d/3 fired arrival %d", k, n)
			}
		}
	}
	for n := range 50 {
		want = append(want, arrival{time.Duration(n) * 5 * time.Millisecond, int64(n%7 + 1)})
	}
	if diff := cmp.Diff(want, sortArrivals(union)); diff != "" {
		t.Errorf("union of the shards' arrivals (-single schedule +shards):\n%s", diff)
	}
	for k, g := range pos {
		if g != 50 {
			t.Errorf("shard %d/3 ends at position %d, want the plan's 50", k, g)
		}
	}
}

func TestShardRefusesTooFewVUsAndBadShard(t *testing.T) {
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3), Shard: Shard{K: 1, N: 3}})
	_, err := r.Run(context.Background(), LoadPlan{VUs: 2, Iterations: 1}, &sink{})
	var pe *PlanError
	if !errors.As(err, &pe) || pe.Field != FieldVUs {
		t.Errorf("2 users on 3 shards: %v, want a PlanError on vus", err)
	}
	// A ramp whose targets never reach one user per shard leaves shard 2/3
	// without users from start to end; one that does is a plan.
	stages := []Stage{{Duration: 50 * time.Millisecond, Target: 2}, {Duration: 50 * time.Millisecond, Target: 1}}
	_, err = r.Run(context.Background(), LoadPlan{Stages: stages}, &sink{})
	if !errors.As(err, &pe) || pe.Field != FieldStages {
		t.Errorf("stages peaking at 2 users on 3 shards: %v, want a PlanError on stages", err)
	}
	if err := (Shard{K: 2, N: 3}).CheckPlan(LoadPlan{Stages: append(stages, Stage{Duration: time.Millisecond, Target: 3})}); err != nil {
		t.Errorf("stages reaching 3 users on 3 shards: %v", err)
	}
	if err := (Shard{K: 2, N: 3}).CheckPlan(LoadPlan{VUs: 3, Stages: stages}); err != nil {
		t.Errorf("a ramp from 3 users on 3 shards: %v", err)
	}
	if _, err := New(Config{Target: tg.URL, Exchanges: exchanges(3), Shard: Shard{K: 3, N: 3}}); err == nil {
		t.Error("shard 3 of 3 accepted")
	}
}
