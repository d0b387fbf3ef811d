package replayer

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// TestCompareRunsUntilItKnows: with MaxDuration, Compare looks after the
// first slices, adds LookEvery pairs while Look says go on, and takes its
// last look at MaxDuration; slices keep alternating and numbering on.
func TestCompareRunsUntilItKnows(t *testing.T) {
	for _, tc := range []struct {
		name      string
		every     int
		stopAt    int // the look that says stop; 0: never
		wantLooks []Look
		slices    int
	}{
		{"doubling to the end", 0, 0, []Look{
			{N: 1, Slices: 4, Ran: 200 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
			{N: 2, Slices: 8, Ran: 400 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
			{N: 3, Slices: 10, Ran: 500 * time.Millisecond, MaxDuration: 500 * time.Millisecond, Last: true},
		}, 10},
		{"every 2 to the end", 2, 0, []Look{
			{N: 1, Slices: 4, Ran: 200 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
			{N: 2, Slices: 6, Ran: 300 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
			{N: 3, Slices: 8, Ran: 400 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
			{N: 4, Slices: 10, Ran: 500 * time.Millisecond, MaxDuration: 500 * time.Millisecond, Last: true},
		}, 10},
		{"stops at the second look", 0, 2, []Look{
			{N: 1, Slices: 4, Ran: 200 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
			{N: 2, Slices: 8, Ran: 400 * time.Millisecond, MaxDuration: 500 * time.Millisecond},
		}, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &journal{}
			a, b, _, _ := compareSides(t, j)
			var looks []Look
			plan := ComparePlan{Load: LoadPlan{VUs: 1, Duration: 200 * time.Millisecond}, Slices: 4, MaxDuration: 500 * time.Millisecond, LookEvery: tc.every,
				Look: func(_ context.Context, l Look) (bool, error) {
					looks = append(looks, l)
					return l.N == tc.stopAt, nil
				}}
			st, err := Compare(context.Background(), plan, a, b)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(looks, tc.wantLooks) {
				t.Errorf("looks %+v, want %+v", looks, tc.wantLooks)
			}
			if st.Slices != tc.slices || st.Looks != len(tc.wantLooks) {
				t.Errorf("stats: %d slices, %d looks; want %d and %d", st.Slices, st.Looks, tc.slices, len(tc.wantLooks))
			}
			// Every slice of both sides ran, in alternating order.
			order := j.entries
			for i := 1; i <= tc.slices; i++ {
				first, second := "A", "B"
				if i%2 == 0 {
					first, second = "B", "A"
				}
				fi := slices.Index(order, fmt.Sprintf("%s load %d", first, i))
				si := slices.Index(order, fmt.Sprintf("%s load %d", second, i))
				if fi < 0 || si < 0 || fi > si {
					t.Fatalf("slice %d: want %s then %s; journal %q", i, first, second, order)
				}
			}
		})
	}
}

// TestCompareCalibratedLoadIsFair: with Calibrate, both sides run the open
// model at a rate found from the slower side's closed-model warmup, and
// receive the same requests at the same offsets in every slice — however
// slow one of the candidate's endpoints is. The targets count what they
// receive.
func TestCompareCalibratedLoadIsFair(t *testing.T) {
	ta := newTarget(t, func(time.Time) { time.Sleep(2 * time.Millisecond) })
	tb := newTarget(t, nil)
	// The candidate answers /items/1 20 ms late: in a closed model its
	// virtual users would wait there and send fewer of the others.
	tb.Server.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/items/1" {
			time.Sleep(20 * time.Millisecond)
		} else {
			time.Sleep(2 * time.Millisecond)
		}
		tb.serve(w, r)
	})
	var sa, sb sink
	a := Side{Name: "baseline", Replayer: newReplayer(t, Config{Target: ta.URL, Exchanges: exchanges(4)}), Sink: &sa}
	b := Side{Name: "candidate", Replayer: newReplayer(t, Config{Target: tb.URL, Exchanges: exchanges(4)}), Sink: &sb}
	plan := ComparePlan{Load: LoadPlan{VUs: 4, Duration: 600 * time.Millisecond}, Slices: 3, Warmup: 300 * time.Millisecond, Calibrate: 0.5}
	st, err := Compare(context.Background(), plan, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rate.Count == 0 || st.Throughput <= 0 {
		t.Fatalf("no calibrated rate: %+v", st)
	}
	// The slower side's throughput under 4 VUs is at most what its mix
	// allows: one request in four takes 20 ms.
	if limit := 4 / (0.25*0.020 + 0.75*0.002); st.Throughput > limit*1.05 {
		t.Errorf("throughput %.0f/s is above the slower side's limit %.0f/s: calibrated on the faster side", st.Throughput, limit)
	}
	type key struct {
		slice int
		uri   string
	}
	count := func(rs []*snapshots.Result) map[key]int {
		m := map[key]int{}
		for _, r := range rs {
			m[key{r.Slice, r.URL}]++
		}
		return m
	}
	ca, cb := count(sa.all()), count(sb.all())
	if len(ca) == 0 || !maps.Equal(ca, cb) {
		t.Errorf("the sides got different requests per slice:\nbaseline  %v\ncandidate %v", ca, cb)
	}
	want := int(float64(st.Rate.Count) * 0.6)
	if n := len(sb.all()); n < want-3 || n > want+3 {
		t.Errorf("candidate got %d requests; the open model at %s for 600ms sends about %d", n, st.Rate, want)
	}
}
