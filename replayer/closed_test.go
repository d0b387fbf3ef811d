package replayer

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestClosedIterationsSendEachRequestInOrder(t *testing.T) {
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3)})
	var s sink
	st, err := r.Run(context.Background(), LoadPlan{Iterations: 2}, &s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range tg.seen() {
		got = append(got, q.Method+" "+q.URI)
	}
	want := []string{"GET /items/1", "GET /items/2", "GET /items/3", "GET /items/1", "GET /items/2", "GET /items/3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("target saw (-want +got):\n%s", diff)
	}
	res := s.all()
	if len(res) != 6 || st.Requests != 6 || st.Failures != 0 {
		t.Fatalf("results %d, stats %+v; want 6 results, no failures", len(res), st)
	}
	for i, r := range res {
		if r.ExchangeID != int64(i%3+1) || r.Status != 200 || r.RecordedStatus != 200 || r.Phase != "load" ||
			r.Endpoint != "GET /items/{id}" || r.URL != "/items/"+strconv.Itoa(i%3+1) || r.Bytes == 0 || r.Error != "" {
			t.Errorf("result %d = %+v", i, r)
		}
		if r.Sent.Before(r.Intended) || r.Done.Before(r.Sent) {
			t.Errorf("result %d times out of order: intended %v sent %v done %v", i, r.Intended, r.Sent, r.Done)
		}
	}
}

func TestClosedVUsIterationsExactCount(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(2 * time.Millisecond) })
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(10)})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 4, Iterations: 5}, &s); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, q := range tg.seen() {
		count[q.URI]++
	}
	for i := 1; i <= 10; i++ {
		if n := count["/items/"+strconv.Itoa(i)]; n != 5 {
			t.Errorf("/items/%d sent %d times, want 5", i, n)
		}
	}
	if n := len(tg.seen()); n != 50 {
		t.Errorf("target saw %d requests, want 50", n)
	}
	if c := tg.maxConcurrency(); c > 4 {
		t.Errorf("target saw %d concurrent requests, want at most 4", c)
	}
}

func TestClosedVUsBoundConcurrencyAndDurationStops(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(20 * time.Millisecond) })
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3)})
	var s sink
	start := time.Now()
	d := 800 * time.Millisecond
	st, err := r.Run(context.Background(), LoadPlan{VUs: 5, Duration: d}, &s)
	if err != nil {
		t.Fatal(err)
	}
	if c := tg.maxConcurrency(); c != 5 {
		t.Errorf("target saw at most %d concurrent requests, want exactly 5 (5 VUs)", c)
	}
	reqs := tg.seen()
	if len(reqs) < 10 {
		t.Fatalf("target saw only %d requests in %s", len(reqs), d)
	}
	if last := reqs[len(reqs)-1].At.Sub(start); last > d+100*time.Millisecond {
		t.Errorf("last request arrived %s after the start of a %s run", last, d)
	}
	if int(st.Requests) != len(reqs) {
		t.Errorf("stats count %d requests, target saw %d", st.Requests, len(reqs))
	}
}

func TestClosedStagesRampVUs(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(20 * time.Millisecond) })
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3)})
	var s sink
	start := time.Now()
	plan := LoadPlan{Stages: []Stage{{Duration: 600 * time.Millisecond, Target: 6}, {Duration: 600 * time.Millisecond, Target: 6}}}
	if _, err := r.Run(context.Background(), plan, &s); err != nil {
		t.Fatal(err)
	}
	early, late := 0, 0
	for _, q := range tg.seen() {
		switch at := q.At.Sub(start); {
		case at < 150*time.Millisecond:
			early = max(early, q.Concurrent)
		case at > 700*time.Millisecond:
			late = max(late, q.Concurrent)
		}
	}
	if early > 2 {
		t.Errorf("in the first 150ms of a ramp from 0 to 6 VUs over 600ms the target saw %d concurrent requests, want ≤ 2", early)
	}
	if late != 6 {
		t.Errorf("at the plateau the target saw at most %d concurrent requests, want 6", late)
	}
}

func TestSlicesContinueTheSequence(t *testing.T) {
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(5)})
	var s sink
	for slice := 1; slice <= 3; slice++ {
		// Two requests per slice: iterations count whole passes, so bound by
		// duration-free iterations of a 1-request filter is not possible;
		// use a rate and an iteration of the 5-request pass instead.
		if _, err := r.Run(context.Background(), LoadPlan{Slice: slice, Iterations: 1}, &s); err != nil {
			t.Fatal(err)
		}
	}
	res := s.all()
	if len(res) != 15 {
		t.Fatalf("%d results, want 15", len(res))
	}
	for i, x := range res {
		if x.Slice != i/5+1 || x.ExchangeID != int64(i%5+1) {
			t.Errorf("result %d: slice %d exchange %d; want slice %d exchange %d", i, x.Slice, x.ExchangeID, i/5+1, i%5+1)
		}
	}
	if r.Position() != 15 {
		t.Errorf("position %d, want 15", r.Position())
	}
}

func TestSlicesByDurationResumeWhereTheLastStopped(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(5 * time.Millisecond) })
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(7)})
	var s sink
	var ends []int64
	for slice := 1; slice <= 3; slice++ {
		if _, err := r.Run(context.Background(), LoadPlan{Slice: slice, Duration: 100 * time.Millisecond}, &s); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, r.Position())
	}
	res := s.all()
	if int64(len(res)) != ends[2] {
		t.Fatalf("%d results, position %d: every request taken must be sent", len(res), ends[2])
	}
	for i, x := range res {
		if x.ExchangeID != int64(i%7+1) {
			t.Fatalf("result %d (slice %d) replays exchange %d, want %d: the sequence must continue across slices", i, x.Slice, x.ExchangeID, i%7+1)
		}
	}
}
