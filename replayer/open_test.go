package replayer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

func TestOpenRateArrivesAtTheRate(t *testing.T) {
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(4)})
	var s sink
	const rate, secs = 200, 2
	start := time.Now()
	st, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: rate, Per: time.Second}, Duration: secs * time.Second}, &s)
	if err != nil {
		t.Fatal(err)
	}
	reqs := tg.seen()
	want := rate * secs
	if n := len(reqs); n < want*9/10 || n > want*11/10 {
		t.Fatalf("target saw %d requests, want %d ±10%%", n, want)
	}
	// Arrivals per 100ms at the target, summed per 500ms: the load is spread
	// over the run, not sent in bursts (generous: the machine is shared).
	buckets := make([]int, secs*10)
	for _, q := range reqs {
		if b := int(q.At.Sub(start) / (100 * time.Millisecond)); b >= 0 && b < len(buckets) {
			buckets[b]++
		}
	}
	thin := 0
	for i := 0; i < len(buckets); i += 5 {
		if sum := buckets[i] + buckets[i+1] + buckets[i+2] + buckets[i+3] + buckets[i+4]; sum < rate/2/2 {
			thin++
		}
	}
	if thin > 1 {
		t.Errorf("arrivals per 100ms %v: %d of 4 half-seconds got less than half the rate", buckets, thin)
	}
	if st.Requests != int64(len(s.all())) || st.Model != "open" {
		t.Errorf("stats %+v", st)
	}
}

func TestOpenRateWithIterationsSendsEachRequestOnce(t *testing.T) {
	tg := newTarget(t, nil)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(20)})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 100, Per: time.Second}, Iterations: 1}, &s); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, q := range tg.seen() {
		got[q.URI]++
	}
	if len(got) != 20 || len(tg.seen()) != 20 {
		t.Errorf("target saw %d requests over %d paths, want each of 20 once", len(tg.seen()), len(got))
	}
}

// TestOpenStalledTargetLatencyFromIntendedStart stalls the target for a
// second in the middle of an open-model run: requests scheduled during the
// stall cannot go out (every connection is held), so they are sent late, and
// their latency, counted from the intended start, shows the stall even
// though the target answers them quickly.
func TestOpenStalledTargetLatencyFromIntendedStart(t *testing.T) {
	var start time.Time
	stallFrom, stallTo := 500*time.Millisecond, 1500*time.Millisecond
	tg := newTarget(t, func(at time.Time) {
		if el := at.Sub(start); el >= stallFrom && el < stallTo {
			time.Sleep(stallTo - el)
		}
	})
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(4), MaxInFlight: 4})
	var s sink
	var maxBehind time.Duration
	var mu sync.Mutex
	start = time.Now()
	st, err := r.Run(context.Background(), LoadPlan{
		Rate: Rate{Count: 100, Per: time.Second}, Duration: 2 * time.Second,
		ProgressInterval: 50 * time.Millisecond,
		Progress: func(p Progress) {
			mu.Lock()
			maxBehind = max(maxBehind, p.Behind)
			mu.Unlock()
		},
	}, &s)
	if err != nil {
		t.Fatal(err)
	}
	var during, slow, quickService int
	for _, x := range s.all() {
		if x.Failed() {
			t.Errorf("result failed: %+v", x)
		}
		at := x.Intended.Sub(start)
		if at < stallFrom+100*time.Millisecond || at >= stallTo-200*time.Millisecond {
			continue
		}
		during++
		if x.Latency() >= 200*time.Millisecond {
			slow++
		}
		if x.ServiceTime() < 100*time.Millisecond {
			quickService++
		}
	}
	if during < 50 {
		t.Fatalf("only %d requests intended during the stall, want ~70", during)
	}
	if slow < during*9/10 {
		t.Errorf("%d of %d requests intended during a 1s stall had latency ≥ 200ms from intended start; want nearly all", slow, during)
	}
	if quickService < during/2 {
		t.Errorf("%d of %d requests intended during the stall had a quick service time; want most (they were sent late, after the stall)", quickService, during)
	}
	if st.Late < int64(during/2) || st.MaxLate < 300*time.Millisecond {
		t.Errorf("stats late %d max %s; want the requests held back by the stall counted late", st.Late, st.MaxLate)
	}
	if maxBehind < 300*time.Millisecond {
		t.Errorf("progress showed the scheduler at most %s behind during a 1s stall", maxBehind)
	}
}

// TestOpenTargetThatNeverAnswers: requests time out, and those that could
// never be sent are recorded as failed "not sent: target stalled".
func TestOpenTargetThatNeverAnswers(t *testing.T) {
	release := make(chan struct{})
	tg := newTarget(t, nil)
	tg.holdCtx = func(ctx context.Context) {
		select {
		case <-release:
		case <-ctx.Done(): // the replayer gave up on it
		}
	}
	defer close(release)
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3), MaxInFlight: 2, Timeout: 300 * time.Millisecond})
	var s sink
	st, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 50, Per: time.Second}, Duration: 500 * time.Millisecond}, &s)
	if err != nil {
		t.Fatal(err)
	}
	res := s.all()
	if len(res) != 25 {
		t.Errorf("%d results, want 25 (50/s for 500ms), sent or not", len(res))
	}
	var timeouts, notSent int
	for _, x := range res {
		switch {
		case strings.HasPrefix(x.Error, "timeout"):
			timeouts++
		case x.Error == "not sent: target stalled":
			notSent++
			if x.Latency() < 300*time.Millisecond {
				t.Errorf("a request not sent has latency %s from its intended start; want at least the timeout", x.Latency())
			}
		default:
			t.Errorf("unexpected result %+v", x)
		}
		if !x.Failed() {
			t.Errorf("result did not fail: %+v", x)
		}
	}
	if timeouts == 0 || notSent == 0 || st.NotSent != int64(notSent) || st.Failures != 25 {
		t.Errorf("timeouts %d, not sent %d, stats %+v", timeouts, notSent, st)
	}
	if st.MaxInFlight > 2 {
		t.Errorf("%d requests in flight at once; the cap is 2", st.MaxInFlight)
	}
}

func TestOpenModelCapsInFlight(t *testing.T) {
	tg := newTarget(t, func(time.Time) { time.Sleep(150 * time.Millisecond) })
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3), MaxInFlight: 3})
	var s sink
	st, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 100, Per: time.Second}, Duration: 500 * time.Millisecond}, &s)
	if err != nil {
		t.Fatal(err)
	}
	if c := tg.maxConcurrency(); c != 3 {
		t.Errorf("target saw at most %d concurrent requests; want the cap, 3", c)
	}
	if st.Late == 0 || len(s.all()) != 50 {
		t.Errorf("late %d, results %d; want requests held back by the cap counted late, and all 50 results", st.Late, len(s.all()))
	}
}

func TestSpeedReproducesRecordedOffsetsScaled(t *testing.T) {
	tg := newTarget(t, nil)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	offsets := []time.Duration{0, 200 * time.Millisecond, 600 * time.Millisecond, 1000 * time.Millisecond, 1100 * time.Millisecond}
	var ex []*snapshots.Exchange
	for i, off := range offsets {
		e := exchanges(len(offsets))[i]
		e.Start = t0.Add(off)
		ex = append(ex, e)
	}
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: ex})
	var s sink
	start := time.Now()
	if _, err := r.Run(context.Background(), LoadPlan{Speed: 2}, &s); err != nil {
		t.Fatal(err)
	}
	reqs := tg.seen()
	if len(reqs) != len(offsets) {
		t.Fatalf("target saw %d requests, want %d", len(reqs), len(offsets))
	}
	for i, q := range reqs {
		want := offsets[i] / 2
		got := q.At.Sub(start)
		if got < want-5*time.Millisecond || got > want+80*time.Millisecond {
			t.Errorf("request %d arrived at +%s, want +%s (recorded +%s at speed 2)", i, got, want, offsets[i])
		}
	}
}

func TestSpeedNeedsRecordedTimes(t *testing.T) {
	tg := newTarget(t, nil)
	ex := exchanges(3)
	for _, e := range ex {
		e.Start = time.Time{}
	}
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: ex})
	_, err := r.Run(context.Background(), LoadPlan{Speed: 1}, &sink{})
	if err == nil || !strings.Contains(err.Error(), "no start times") {
		t.Errorf("err = %v, want one about missing start times", err)
	}
}

// TestOpenIdleConnectionsClosedByServer: a server that closes idle
// keep-alive connections long before the next request (IdleTimeout 20ms,
// a request every 250ms) makes no request fail, POSTs included: an idle
// worker sees the close and does not send on the dead connection.
func TestOpenIdleConnectionsClosedByServer(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "ok")
	}))
	srv.Config.IdleTimeout = 20 * time.Millisecond
	srv.Start()
	defer srv.Close()
	ex := exchanges(1)
	ex[0].Method = "POST"
	ex[0].RequestBody = []byte(`{"a":1}`)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: ex})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 4, Per: time.Second}, Iterations: 5}, &s); err != nil {
		t.Fatal(err)
	}
	for i, x := range s.all() {
		if x.Error != "" || x.Status != 200 {
			t.Errorf("POST %d: %d %q", i, x.Status, x.Error)
		}
	}
	if hits.Load() != 5 {
		t.Errorf("server saw %d POSTs, want 5", hits.Load())
	}
}

// TestOpenLargeBodiesArriveWhole sends bodies larger than a socket buffer
// takes at once: each arrives whole, and gets its response.
func TestOpenLargeBodiesArriveWhole(t *testing.T) {
	const size = 8 << 20
	var mu sync.Mutex
	var got []int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	ex := exchanges(1)
	ex[0].Method = "POST"
	ex[0].RequestBody = bytes.Repeat([]byte("x"), size)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: ex})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 20, Per: time.Second}, Iterations: 5}, &s); err != nil {
		t.Fatal(err)
	}
	for i, x := range s.all() {
		if x.Error != "" || x.Status != 200 {
			t.Errorf("POST %d: %d %q", i, x.Status, x.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 5 {
		t.Fatalf("server saw %d POSTs, want 5", len(got))
	}
	for i, n := range got {
		if n != size {
			t.Errorf("POST %d: body of %d bytes arrived, want %d", i, n, size)
		}
	}
}

// TestOpenCanceledRunDropsCutRequests: canceling an open-model run with
// requests in flight returns promptly, without their results.
func TestOpenCanceledRunDropsCutRequests(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tg := newTarget(t, nil)
	tg.holdCtx = func(rctx context.Context) {
		cancel()
		<-rctx.Done()
	}
	r := newReplayer(t, Config{Target: tg.URL, Exchanges: exchanges(3)})
	var s sink
	start := time.Now()
	_, err := r.Run(ctx, LoadPlan{Rate: Rate{Count: 100, Per: time.Second}, Duration: time.Minute}, &s)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("Run returned %s after the cancellation", el)
	}
	if n := len(s.all()); n != 0 {
		t.Errorf("%d results from requests cut by the cancellation; want none", n)
	}
}

// countingServer is a target answering "ok" that counts the connections
// it accepts.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// TestOpenConnectionsCarryOverBetweenSlices: the connection of one slice's
// worker serves the next slice (one worker at most: MaxInFlight 1).
func TestOpenConnectionsCarryOverBetweenSlices(t *testing.T) {
	srv, conns := countingServer(t)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(2), MaxInFlight: 1})
	for slice := 1; slice <= 3; slice++ {
		var s sink
		if _, err := r.Run(context.Background(), LoadPlan{Slice: slice, Rate: Rate{Count: 50, Per: time.Second}, Iterations: 5}, &s); err != nil {
			t.Fatal(err)
		}
		for _, x := range s.all() {
			if x.Error != "" || x.Status != 200 {
				t.Fatalf("slice %d: %d %q", slice, x.Status, x.Error)
			}
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 slices of one worker; want 1, kept between slices", n)
	}
}

// TestOpenIdleLongerThanTheTimeout: a connection idle for longer than the
// request timeout (whose deadline it still carries) is kept, not dropped.
func TestOpenIdleLongerThanTheTimeout(t *testing.T) {
	srv, conns := countingServer(t)
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(1), Timeout: 250 * time.Millisecond, MaxInFlight: 1})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 2, Per: time.Second}, Iterations: 3}, &s); err != nil {
		t.Fatal(err)
	}
	for i, x := range s.all() {
		if x.Error != "" || x.Status != 200 {
			t.Errorf("request %d: %d %q", i, x.Status, x.Error)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 3 requests 500ms apart; want 1", n)
	}
}
