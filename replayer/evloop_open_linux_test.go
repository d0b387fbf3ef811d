//go:build linux

package replayer

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// openPathRun is one path's run of an open-model plan.
type openPathRun struct {
	res []*snapshots.Result
	st  Stats
	out []string // the outcomes, sorted
}

// runOpenBoth runs plan with cfg on the event loop and on goroutines, and
// checks that each took its path and that no request left before its
// intended start.
func runOpenBoth(t *testing.T, cfg Config, plan LoadPlan) (loop, gor openPathRun) {
	t.Helper()
	for _, noLoop := range []bool{false, true} {
		r := newReplayer(t, cfg)
		r.noLoop = noLoop
		var s sink
		st, err := r.Run(context.Background(), plan, &s)
		if err != nil {
			t.Fatal(err)
		}
		if served := r.loopServed.Load(); noLoop != (served == 0) {
			t.Fatalf("noLoop %v: %d requests on the event loop", noLoop, served)
		}
		run := openPathRun{res: s.all(), st: st}
		for _, res := range run.res {
			run.out = append(run.out, outcome(res))
			if res.Sent.Before(res.Intended) {
				t.Errorf("noLoop %v: sent %s before its intended start", noLoop, res.Intended.Sub(res.Sent))
			}
		}
		slices.Sort(run.out)
		if noLoop {
			gor = run
		} else {
			loop = run
		}
	}
	return loop, gor
}

// sameOpenOutcomes runs plan on both paths, compares their outcomes and
// checks them with want (nil: no check).
func sameOpenOutcomes(t *testing.T, cfg Config, plan LoadPlan, want func(*testing.T, []string)) (loop, gor openPathRun) {
	t.Helper()
	loop, gor = runOpenBoth(t, cfg, plan)
	if !slices.Equal(loop.out, gor.out) {
		t.Errorf("event loop:\n%s\ngoroutines:\n%s", strings.Join(loop.out, "\n"), strings.Join(gor.out, "\n"))
	}
	if want != nil {
		want(t, loop.out)
	}
	return loop, gor
}

func helloServer(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// The rate is kept: 200/s for a second is 200 requests on either path, each
// sent at (never before) its intended start, the loop's within a few
// hundred microseconds of it on most of them.
func TestLoopOpenRate(t *testing.T) {
	cfg := Config{Target: helloServer(t), Exchanges: exchanges(3)}
	plan := LoadPlan{Rate: Rate{Count: 200, Per: time.Second}, Duration: time.Second}
	loop, gor := sameOpenOutcomes(t, cfg, plan, allContain(`status=200 rec=200 bytes=13 err=""`))
	for _, run := range []openPathRun{loop, gor} {
		if n := len(run.res); n < 199 || n > 201 {
			t.Errorf("%d requests, want 200 ±1", n)
		}
		if run.st.Model != "open" || run.st.Requests != int64(len(run.res)) || run.st.NotSent != 0 {
			t.Errorf("stats %+v", run.st)
		}
	}
	var lag []time.Duration
	for _, res := range loop.res {
		lag = append(lag, res.Sent.Sub(res.Intended))
		if res.Latency() != res.Done.Sub(res.Intended) {
			t.Errorf("latency %s, not from the intended start", res.Latency())
		}
	}
	slices.Sort(lag)
	if p50 := lag[len(lag)/2]; p50 > 2*time.Millisecond {
		t.Errorf("the loop sent half the requests more than %s after their intended start", p50)
	}
}

// At 20,000/s the loop sends the requests due within 50µs at one wake-up:
// each still no sooner than its intended start (runOpenBoth checks), and
// every one of them sent.
func TestLoopOpenHighRate(t *testing.T) {
	cfg := Config{Target: helloServer(t), Exchanges: exchanges(3)}
	plan := LoadPlan{Rate: Rate{Count: 20000, Per: time.Second}, Duration: 250 * time.Millisecond}
	loop, gor := sameOpenOutcomes(t, cfg, plan, allContain(`status=200 rec=200 bytes=13 err=""`))
	for _, run := range []openPathRun{loop, gor} {
		if n := len(run.res); n < 4999 || n > 5001 {
			t.Errorf("%d requests, want 5000 ±1", n)
		}
	}
}

// Iterations bound the plan: each request once per iteration.
func TestLoopOpenIterations(t *testing.T) {
	cfg := Config{Target: helloServer(t), Exchanges: exchanges(7)}
	plan := LoadPlan{Rate: Rate{Count: 500, Per: time.Second}, Iterations: 2}
	loop, _ := sameOpenOutcomes(t, cfg, plan, allContain(`status=200`))
	if len(loop.res) != 14 {
		t.Errorf("%d requests, want 14", len(loop.res))
	}
}

// The as-recorded model replays the recorded offsets (10ms apart), at
// speed 2.
func TestLoopOpenAsRecorded(t *testing.T) {
	cfg := Config{Target: helloServer(t), Exchanges: exchanges(10)}
	loop, gor := sameOpenOutcomes(t, cfg, LoadPlan{Speed: 2}, allContain(`status=200`))
	for _, run := range []openPathRun{loop, gor} {
		if run.st.Model != "recorded" || len(run.res) != 10 {
			t.Fatalf("stats %+v, %d results", run.st, len(run.res))
		}
		slices.SortFunc(run.res, func(a, b *snapshots.Result) int { return a.Intended.Compare(b.Intended) })
		for i, res := range run.res {
			if off := res.Intended.Sub(run.res[0].Intended); off != time.Duration(i)*5*time.Millisecond {
				t.Errorf("request %d intended at +%s, want +%dms", i, off, 5*i)
			}
		}
	}
}

// The as-recorded model bounded by a duration: passes of the recording
// (100ms each, 25ms at speed 4) repeat until it ends.
func TestLoopOpenAsRecordedDuration(t *testing.T) {
	cfg := Config{Target: helloServer(t), Exchanges: exchanges(10)}
	loop, gor := sameOpenOutcomes(t, cfg, LoadPlan{Speed: 4, Duration: 60 * time.Millisecond}, allContain(`status=200`))
	for _, run := range []openPathRun{loop, gor} {
		if len(run.res) != 24 {
			t.Errorf("%d requests, want 24 (every 2.5ms for 60ms)", len(run.res))
		}
	}
}

// A slow target and a small MaxInFlight: requests are held until a
// connection is free, sent late, their latency counted from the intended
// start.
func TestLoopOpenHeld(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(40 * time.Millisecond)
		io.WriteString(w, "slow")
	}))
	defer srv.Close()
	cfg := Config{Target: srv.URL, Exchanges: exchanges(3), MaxInFlight: 2, Timeout: 3 * time.Second}
	plan := LoadPlan{Rate: Rate{Count: 200, Per: time.Second}, Duration: 300 * time.Millisecond}
	loop, gor := sameOpenOutcomes(t, cfg, plan, allContain(`status=200 rec=200 bytes=4 err=""`))
	for _, run := range []openPathRun{loop, gor} {
		if len(run.res) != 60 || run.st.Late < 30 || run.st.MaxLate < 300*time.Millisecond || run.st.MaxInFlight > 2 {
			t.Errorf("%d results, stats %+v", len(run.res), run.st)
		}
		slowest := slices.MaxFunc(run.res, func(a, b *snapshots.Result) int { return int(a.Latency() - b.Latency()) })
		if slowest.Latency() < 500*time.Millisecond || slowest.ServiceTime() > 300*time.Millisecond {
			t.Errorf("slowest latency %s, service time %s", slowest.Latency(), slowest.ServiceTime())
		}
	}
}

func neverAnswers(t *testing.T) string {
	return rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.Copy(io.Discard, br)
	})
}

// A target that never answers, one connection: the first request times out
// at 300ms, the second goes out then, held; at the run's end plus the
// timeout (500ms) the two left are not sent.
func TestLoopOpenStall(t *testing.T) {
	cfg := Config{Target: neverAnswers(t), Exchanges: exchanges(2), MaxInFlight: 1, Timeout: 300 * time.Millisecond}
	plan := LoadPlan{Rate: Rate{Count: 20, Per: time.Second}, Duration: 200 * time.Millisecond}
	loop, gor := sameOpenOutcomes(t, cfg, plan, nil)
	want := []string{`err="not sent: target stalled"`, `err="not sent: target stalled"`,
		`err="timeout: no complete response within 300ms"`, `err="timeout: no complete response within 300ms"`}
	for _, run := range []openPathRun{loop, gor} {
		var got []string
		for _, o := range run.out {
			got = append(got, o[strings.Index(o, "err="):strings.Index(o, " phase=")])
		}
		slices.Sort(got)
		if !slices.Equal(got, want) || run.st.NotSent != 2 || run.st.Late != 1 {
			t.Errorf("errors %q, stats %+v", got, run.st)
		}
	}
}

func TestLoopOpenTimeouts(t *testing.T) {
	cfg := Config{Target: neverAnswers(t), Exchanges: exchanges(2), Timeout: 150 * time.Millisecond}
	plan := LoadPlan{Rate: Rate{Count: 50, Per: time.Second}, Duration: 200 * time.Millisecond}
	loop, _ := sameOpenOutcomes(t, cfg, plan, allContain(`err="timeout: no complete response within 150ms"`))
	if len(loop.res) != 10 {
		t.Errorf("%d results, want 10", len(loop.res))
	}
}

// A server that closes each connection after one answer, without saying
// so, and one that says so (Connection: close).
func TestLoopOpenServerClosesConnections(t *testing.T) {
	silent := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	said := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye")
	})
	plan := LoadPlan{Rate: Rate{Count: 200, Per: time.Second}, Duration: 250 * time.Millisecond}
	sameOpenOutcomes(t, Config{Target: silent, Exchanges: exchanges(2)}, plan, allContain(`status=200 rec=200 bytes=2 err=""`))
	sameOpenOutcomes(t, Config{Target: said, Exchanges: exchanges(2)}, plan, allContain(`status=200 rec=200 bytes=3 err=""`))
}

// Canceling the run ends it at once, on either path; the requests it cut
// short are not results.
func TestLoopOpenCanceled(t *testing.T) {
	url := neverAnswers(t)
	for _, noLoop := range []bool{false, true} {
		r := newReplayer(t, Config{Target: url, Exchanges: exchanges(1)})
		r.noLoop = noLoop
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		var s sink
		start := time.Now()
		st, err := r.Run(ctx, LoadPlan{Rate: Rate{Count: 100, Per: time.Second}, Duration: time.Minute}, &s)
		cancel()
		if err == nil || time.Since(start) > 5*time.Second {
			t.Fatalf("noLoop %v: err %v after %s", noLoop, err, time.Since(start))
		}
		// A dial bounded by ctx's deadline can fail with "i/o timeout" a
		// moment before ctx is marked done: that request was cut by the
		// run's end too, not timed out (it was recorded as a timeout in 3 of
		// 30 runs of the goroutine path before ended()).
		if n := len(s.all()); n != 0 || st.MaxInFlight < 10 {
			t.Errorf("noLoop %v: %d results of canceled requests, stats %+v", noLoop, n, st)
			for _, res := range s.all() {
				t.Log(outcome(res))
			}
		}
	}
}

// Requests refused for a redacted credential are counted on either path,
// however the request was sent (by the scheduler on an idle connection, by
// a new worker, by the loop).
func TestLoopOpenRedactedRefused(t *testing.T) {
	_, rs, srv := authService(t)
	for _, noLoop := range []bool{false, true} {
		r := newReplayer(t, Config{Target: srv.URL, Exchanges: transactions(2)})
		r.noLoop = noLoop
		rs.Unauthorized.Store(0)
		var s statusSink
		if _, err := r.Run(context.Background(), LoadPlan{Rate: Rate{Count: 100, Per: time.Second}, Iterations: 3}, &s); err != nil {
			t.Fatal(err)
		}
		if st := r.State(); st == nil || st.RedactedRefused != 12 || rs.Unauthorized.Load() != 12 {
			t.Errorf("noLoop %v: state %+v, service 401 ×%d; want 12 requests refused with a redacted credential", noLoop, st, rs.Unauthorized.Load())
		}
	}
}

// The loop wakes for the requests due within 50µs of the next one (at most
// 8), not past the run's duration or its limit of iterations.
func TestLoopOpenWakeFor(t *testing.T) {
	r := newReplayer(t, Config{Target: "http://127.0.0.1:1", Exchanges: exchanges(3)})
	t0 := time.Now()
	for _, c := range []struct {
		rate  int
		d     time.Duration
		limit int64
		want  time.Duration
	}{
		{20000, time.Second, -1, 50 * time.Microsecond},
		{100000, time.Second, -1, 50 * time.Microsecond},
		{1000000, time.Second, -1, 8 * time.Microsecond}, // 8 more at most
		{2000, time.Second, -1, 0},
		{20000, 50 * time.Microsecond, -1, 0}, // the next is past the duration
		{20000, 0, 1, 0},                      // the limit is reached
		{20000, 0, 2, 50 * time.Microsecond},
	} {
		sch := r.schedule(LoadPlan{Rate: Rate{Count: c.rate, Per: time.Second}})
		o := &openSched{sch: sch, d: c.d, limit: c.limit, started: t0, n: 1, has: true}
		o.job.intended = t0
		r.cursor.Store(1)
		if got := o.wakeFor(r).Sub(t0); got != c.want {
			t.Errorf("rate %d, duration %s, limit %d: wakes at +%s, want +%s", c.rate, c.d, c.limit, got, c.want)
		}
	}
}
