package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/snapshots"
)

// app is a loopback service: GET /orders answers after delay, GET
// /orders/{id} at once; it counts the requests it answers.
type app struct {
	*httptest.Server
	served atomic.Int64
}

func newApp(t *testing.T, delay time.Duration) *app {
	t.Helper()
	a := &app{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		a.served.Add(1)
		io.WriteString(w, `[{"id":7}]`)
	})
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		a.served.Add(1)
		fmt.Fprintf(w, `{"id":%s}`, r.PathValue("id"))
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

// inbound are the recorded requests the tests replay.
func inbound() []*snapshots.Exchange {
	return []*snapshots.Exchange{
		{ID: 1, Direction: snapshots.Inbound, Method: "GET", URL: "http://orders.local/orders", Status: 200, Endpoint: "GET /orders"},
		{ID: 2, Direction: snapshots.Inbound, Method: "GET", URL: "http://orders.local/orders/7", Status: 200, Endpoint: "GET /orders/{id}"},
	}
}

// getFeed fetches the feed after window since.
func getFeed(t *testing.T, url string, since int) Feed {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("%sapi/feed?since=%d", url, since))
	if err != nil {
		t.Fatalf("feed: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("feed: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var f Feed
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil {
		t.Fatalf("feed: %v", err)
	}
	return f
}

// waitFor polls the feed until ok accepts it, failing t after 15 s.
func waitFor(t *testing.T, url string, what string, ok func(Feed) bool) Feed {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		f := getFeed(t, url, -1)
		if ok(f) {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("no feed with %s in 15s; last: %+v", what, f.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// side returns the named side of f.
func side(t *testing.T, f Feed, name string) SideFeed {
	t.Helper()
	for _, s := range f.Sides {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("feed has no side %q: %+v", name, f.Sides)
	return SideFeed{}
}

// collector gathers the points of a side across polls with ?since.
type collector struct {
	since  int
	points map[string][]Point
}

func (c *collector) poll(t *testing.T, url string) Feed {
	t.Helper()
	f := getFeed(t, url, c.since)
	for _, s := range f.Sides {
		c.points[s.Name] = append(c.points[s.Name], s.Points...)
	}
	c.since = f.Now - 1
	return f
}

// TestFeedDuringRun: while a real run loads a loopback app, the feed
// shows the load phase and growing figures; the points fetched bit by bit
// (?since) add up to the totals, which match the requests the app served;
// at the end the feed says done and /report serves the run's HTML report.
func TestFeedDuringRun(t *testing.T) {
	target := newApp(t, 2*time.Millisecond)
	var notes syncbuf.Buffer
	d := New(Config{Addr: "127.0.0.1:0", Notes: &notes, Window: 200 * time.Millisecond})
	defer d.Close()
	type result struct {
		res *session.RunResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := session.Run(context.Background(), session.RunConfig{
			Config: session.Config{Inbound: inbound(), Observer: d},
			Side:   session.SideConfig{Name: "run", URL: target.URL, RunPath: filepath.Join(t.TempDir(), "run.db")},
			Plan:   replayer.LoadPlan{VUs: 2, Duration: 2 * time.Second},
		})
		done <- result{res, err}
	}()
	url := waitURL(t, d)
	if !strings.Contains(notes.String(), "replay: dashboard at "+url) {
		t.Errorf("notes %q do not give the URL %s", notes.String(), url)
	}
	c := &collector{since: -1, points: map[string][]Point{}}
	first := waitFor(t, url, "load requests", func(f Feed) bool {
		return f.Status.Phase == snapshots.PhaseLoad && len(f.Sides) == 1 && f.Sides[0].Totals.Requests > 0
	})
	if first.Status.State != "running" || first.Status.Side != "run" || first.Status.Command != "run" {
		t.Errorf("status during the run = %+v; want running, side run, command run", first.Status)
	}
	c.poll(t, url)
	time.Sleep(400 * time.Millisecond)
	second := c.poll(t, url)
	if n1, n2 := first.Sides[0].Totals.Requests, side(t, second, "run").Totals.Requests; n2 <= n1 {
		t.Errorf("requests went from %d to %d during the load; want them growing", n1, n2)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	last := c.poll(t, url)
	if last.Status.State != "done" || last.Status.Verdict != "passed" || last.Status.Report != "/report" {
		t.Errorf("status at the end = %+v; want done, passed, report /report", last.Status)
	}
	tot := side(t, last, "run").Totals
	served := target.served.Load()
	if tot.Requests != served || tot.Load != served || r.res.Report.Summary.Overall.Requests != served {
		t.Errorf("feed counts %d requests (%d load), the report %d, the app served %d", tot.Requests, tot.Load, r.res.Report.Summary.Overall.Requests, served)
	}
	if tot.Rate <= 0 || tot.P50 <= 0 || tot.P95 < tot.P50 || tot.P99 < tot.P95 || tot.Max < tot.P99 {
		t.Errorf("totals %+v: want a rate and ordered percentiles", tot)
	}
	checkPoints(t, c.points["run"], tot.Requests)
	if len(last.Endpoints) != 2 || last.Endpoints[0].Endpoint != "GET /orders" || last.Endpoints[1].Endpoint != "GET /orders/{id}" {
		t.Fatalf("endpoints %+v; want GET /orders and GET /orders/{id}", last.Endpoints)
	}
	var sum int64
	for _, e := range last.Endpoints {
		sum += e.Sides[0].Totals.Requests
	}
	if sum != tot.Requests {
		t.Errorf("endpoints count %d requests, the side %d", sum, tot.Requests)
	}
	body := get(t, url+"report", http.StatusOK)
	if !strings.Contains(body, "<html") || !strings.Contains(body, "GET /orders/{id}") {
		t.Errorf("/report is not the run's HTML report:\n%.300s", body)
	}
}

// checkPoints fails t unless the points' windows strictly increase, none
// came twice, and their requests add up to total.
func checkPoints(t *testing.T, pts []Point, total int64) {
	t.Helper()
	var sum int64
	for k, p := range pts {
		if k > 0 && p.I <= pts[k-1].I {
			t.Fatalf("point %d has window %d after window %d: %+v", k, p.I, pts[k-1].I, pts)
		}
		if p.Requests <= 0 || p.Rate <= 0 || p.P95 < p.P50 || p.P99 < p.P95 || p.Max < p.P99 {
			t.Errorf("point %+v: want requests, a rate and ordered percentiles", p)
		}
		sum += p.Requests
	}
	if len(pts) < 3 || sum != total {
		t.Errorf("%d points fetched with ?since hold %d requests; want at least 3 holding all %d", len(pts), sum, total)
	}
}

// waitURL waits for d to listen.
func waitURL(t *testing.T, d *Dashboard) string {
	t.Helper()
	for range 1000 {
		if u := d.URL(); u != "" {
			return u
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the dashboard did not start")
	return ""
}

func get(t *testing.T, url string, want int) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != want {
		t.Fatalf("GET %s: %s; want %d\n%s", url, resp.Status, want, b)
	}
	return string(b)
}

// TestFeedDuringCompare: during a real interleaved comparison of two
// loopback apps, the feed names the side and slice in progress and counts
// both sides; the slower candidate's GET /orders shows a higher p95; at
// the end it gives the verdict and serves the comparison's report.
func TestFeedDuringCompare(t *testing.T) {
	base, cand := newApp(t, time.Millisecond), newApp(t, 15*time.Millisecond)
	d := New(Config{Addr: "127.0.0.1:0", Window: 250 * time.Millisecond})
	defer d.Close()
	dir := t.TempDir()
	errc := make(chan error, 1)
	go func() {
		_, err := session.Compare(context.Background(), session.CompareConfig{
			Config:    session.Config{Inbound: inbound(), Observer: d},
			Baseline:  session.SideConfig{Name: "baseline", URL: base.URL},
			Candidate: session.SideConfig{Name: "candidate", URL: cand.URL},
			Dir:       dir,
			Plan:      replayer.ComparePlan{Load: replayer.LoadPlan{VUs: 2, Duration: 2 * time.Second}, Slices: 4},
		})
		errc <- err
	}()
	url := waitURL(t, d)
	seen := map[string]bool{}
	waitFor(t, url, "both sides' load slices", func(f Feed) bool {
		if f.Status.Phase == snapshots.PhaseLoad && f.Status.Slices == 4 && f.Status.Slice >= 1 {
			seen[fmt.Sprintf("%s %d", f.Status.Side, f.Status.Slice)] = true
		}
		return len(seen) >= 3
	})
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	f := getFeed(t, url, -1)
	if f.Status.State != "done" || f.Status.Verdict == "" || f.Status.Report != "/report" || f.Status.Command != "compare" {
		t.Errorf("status at the end = %+v; want done with a verdict and a report", f.Status)
	}
	b, c := side(t, f, "baseline").Totals, side(t, f, "candidate").Totals
	if b.Requests != base.served.Load() || c.Requests != cand.served.Load() {
		t.Errorf("feed counts %d and %d requests; the apps served %d and %d", b.Requests, c.Requests, base.served.Load(), cand.served.Load())
	}
	orders := f.Endpoints[0]
	if orders.Endpoint != "GET /orders" || len(orders.Sides) != 2 || orders.Sides[1].Totals.P95 < orders.Sides[0].Totals.P95+10 {
		t.Errorf("GET /orders: %+v; want the candidate's p95 15 ms above the baseline's", orders)
	}
	for _, s := range f.Sides {
		slices := map[int]bool{}
		for _, p := range s.Points {
			slices[p.Slice] = true
		}
		if len(slices) < 3 {
			t.Errorf("%s's points come from slices %v; want the interleaved slices", s.Name, slices)
		}
	}
	if body := get(t, url+"report", http.StatusOK); !strings.Contains(body, "<html") || !strings.Contains(body, "candidate") {
		t.Errorf("/report is not the comparison's HTML report:\n%.300s", body)
	}
}

// TestFeedOfAFailedSession: a session that cannot reach its build ends the
// feed as failed, with the error, and no report.
func TestFeedOfAFailedSession(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	d := New(Config{Addr: "127.0.0.1:0"})
	defer d.Close()
	_, err := session.Run(context.Background(), session.RunConfig{
		Config: session.Config{Inbound: inbound(), Observer: d, StartTimeout: 300 * time.Millisecond},
		Side:   session.SideConfig{Name: "run", URL: gone.URL, RunPath: filepath.Join(t.TempDir(), "run.db")},
		Plan:   replayer.LoadPlan{Iterations: 1},
	})
	if err == nil {
		t.Fatal("a run against a closed port succeeded")
	}
	f := getFeed(t, d.URL(), -1)
	if f.Status.State != "failed" || f.Status.Error != err.Error() || f.Status.Report != "" {
		t.Errorf("status %+v; want failed with %q and no report", f.Status, err)
	}
	get(t, d.URL()+"report", http.StatusNotFound)
}

// TestLingerEndsWithTheContext: Close keeps a finished dashboard serving
// for the linger, unless the context given to Start ends first (Ctrl-C).
func TestLingerEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := New(Config{Addr: "127.0.0.1:0", Linger: time.Minute})
	if err := d.Start(ctx, session.Watch{Command: "run", Sides: []string{"run"}}); err != nil {
		t.Fatal(err)
	}
	d.Finish(session.Outcome{})
	closed := make(chan struct{})
	go func() { d.Close(); close(closed) }()
	time.Sleep(200 * time.Millisecond)
	if f := getFeed(t, d.URL(), -1); f.Status.State != "done" {
		t.Errorf("lingering feed: %+v", f.Status)
	}
	select {
	case <-closed:
		t.Fatal("Close returned before the linger or the context ended")
	default:
	}
	cancel()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close still lingers after the context ended")
	}
	if _, err := http.Get(d.URL()); err == nil {
		t.Error("the dashboard still answers after Close")
	}
}

// BenchmarkFeedAdd measures what the dashboard adds to each result.
func BenchmarkFeedAdd(b *testing.B) {
	f := newFeed(time.Now(), time.Second, []string{"a", "b"})
	eps := []string{"GET /a", "GET /b", "POST /c", "GET /d/{id}"}
	now := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		k := 0
		for pb.Next() {
			k++
			r := &snapshots.Result{Endpoint: eps[k%4], Phase: "load", Intended: now, Done: now.Add(time.Duration(k%5000) * time.Microsecond), Status: 200}
			f.add([]string{"a", "b"}[k%2], r)
		}
	})
}
