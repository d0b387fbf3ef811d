package dashboard

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/snapshots"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// result is a result of endpoint that completed at done after lat.
func result(endpoint, phase string, done, lat time.Duration, status int) *snapshots.Result {
	return &snapshots.Result{Endpoint: endpoint, Phase: phase, Intended: t0.Add(done - lat), Done: t0.Add(done), Status: status, RecordedStatus: 200}
}

// near reports whether ms is v within the histograms' 1%.
func near(ms, v float64) bool { return ms >= v && ms <= v*1.01 }

// TestFeedWindows: results fall into the window they completed in; a window
// becomes a point once it is over, and is given once: a result that
// arrives for a window already given goes into the next one, so that
// polling with ?since misses nothing and counts nothing twice.
func TestFeedWindows(t *testing.T) {
	f := newFeed(t0, time.Second, []string{"a"})
	f.add("a", result("GET /x", "load", 200*time.Millisecond, 10*time.Millisecond, 200))
	f.add("a", result("GET /x", "load", 500*time.Millisecond, 30*time.Millisecond, 500))
	f.add("a", result("GET /y", "explain", 900*time.Millisecond, 50*time.Millisecond, 200))
	f.add("a", result("GET /x", "load", 1300*time.Millisecond, 20*time.Millisecond, 200))

	sides, eps := f.read(1, -1)
	got := sides[0].Points
	if len(got) != 1 || got[0].I != 0 || got[0].Requests != 3 || got[0].Failures != 1 || got[0].Phase != "explain" {
		t.Fatalf("points after window 0 = %+v; want window 0 with 3 requests, 1 failed", got)
	}
	// Latency is over the answered requests: the failed one (30 ms) is
	// counted, not timed.
	if p := got[0]; p.Rate != 3 || !near(p.P50, 10) || !near(p.Max, 50) {
		t.Errorf("window 0: rate %v, p50 %v, max %v; want 3/s, 10ms, 50ms", p.Rate, p.P50, p.Max)
	}
	tot := sides[0].Totals
	if tot.Requests != 4 || tot.Failures != 1 || tot.Load != 2 || !near(tot.Max, 20) {
		t.Errorf("totals %+v; want 4 requests, 1 failed, 2 answered in the load (the explain one not in the latencies)", tot)
	}
	if len(eps) != 2 || eps[0].Endpoint != "GET /x" || eps[0].Sides[0].Totals.Requests != 3 || eps[1].Sides[0].Totals.Load != 0 {
		t.Errorf("endpoints %+v", eps)
	}

	sides, _ = f.read(2, 0)
	if got := sides[0].Points; len(got) != 1 || got[0].I != 1 || got[0].Requests != 1 {
		t.Fatalf("points after window 1 = %+v; want window 1 with one request", got)
	}
	// Late: it completed in window 1, which was given already.
	f.add("a", result("GET /x", "load", 1900*time.Millisecond, 5*time.Millisecond, 200))
	sides, _ = f.read(2, 1)
	if len(sides[0].Points) != 0 {
		t.Fatalf("window 2 is not over, yet points %+v", sides[0].Points)
	}
	sides, _ = f.read(4, 1)
	if got := sides[0].Points; len(got) != 1 || got[0].I != 2 || got[0].Requests != 1 {
		t.Fatalf("points after window 2 = %+v; want the late result in window 2", got)
	}
	all, _ := f.read(4, -1)
	var sum int64
	for _, p := range all[0].Points {
		sum += p.Requests
	}
	if sum != 5 || all[0].Totals.Requests != 5 {
		t.Errorf("points hold %d requests, totals %d; want 5", sum, all[0].Totals.Requests)
	}
}

// TestFeedRateOfAnInterleavedSide: a side's rate counts the time its load
// ran (its slices), not the windows it shared with the other side.
func TestFeedRateOfAnInterleavedSide(t *testing.T) {
	f := newFeed(t0, time.Second, []string{"a", "b"})
	// a runs from 0.5s to 1.5s (progress at 0.75s, final at 1.5s), b from
	// 1.5s to 2.5s; each completes 50 requests in its slice.
	f.progress("a", t0.Add(500*time.Millisecond), t0.Add(750*time.Millisecond), false)
	f.progress("a", t0.Add(500*time.Millisecond), t0.Add(1500*time.Millisecond), true)
	f.progress("b", t0.Add(1500*time.Millisecond), t0.Add(2500*time.Millisecond), true)
	for k := range 50 {
		at := 500*time.Millisecond + time.Duration(k)*20*time.Millisecond + 10*time.Millisecond
		f.add("a", result("GET /x", "load", at, time.Millisecond, 200))
		f.add("b", result("GET /x", "load", at+time.Second, time.Millisecond, 200))
	}
	sides, _ := f.read(3, -1)
	rates := map[string][]float64{}
	for _, s := range sides {
		for _, p := range s.Points {
			rates[s.Name] = append(rates[s.Name], p.Rate)
		}
		if s.Totals.Rate != 50 {
			t.Errorf("%s: rate %v over its load; want 50/s", s.Name, s.Totals.Rate)
		}
	}
	want := map[string][]float64{"a": {50, 50}, "b": {50, 50}}
	if diff := cmp.Diff(want, rates); diff != "" {
		t.Errorf("rates per window (-want +got):\n%s", diff)
	}

	// A slice still running, told only as it started (at 3.9s): it runs
	// until now, so it ran 0.1s of window 3.
	f.progress("a", t0.Add(3900*time.Millisecond), t0.Add(3900*time.Millisecond), false)
	for k := range 20 {
		f.add("a", result("GET /x", "load", 3900*time.Millisecond+time.Duration(k)*5*time.Millisecond, time.Millisecond, 200))
	}
	f.add("a", result("GET /x", "load", 4100*time.Millisecond, time.Millisecond, 200))
	sides, _ = f.read(4, 2)
	if got := sides[0].Points; len(got) != 1 || got[0].I != 3 || !near(got[0].Rate, 200) {
		t.Errorf("window 3 of a slice still running = %+v; want 20 requests in 0.1s, 200/s", got)
	}
}

// TestHostCheck: a loopback dashboard answers requests naming a loopback
// host only (no DNS rebinding).
func TestHostCheck(t *testing.T) {
	d := New(Config{Addr: "127.0.0.1:0"})
	d.feed = newFeed(t0, time.Second, []string{"a"})
	srv := httptest.NewServer(nil)
	defer srv.Close()
	srv.Config.Handler = d.handler(srv.Listener.Addr())
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	for host, want := range map[string]int{
		"127.0.0.1:" + port: http.StatusOK, "localhost:" + port: http.StatusOK, "[::1]:" + port: http.StatusOK,
		"rebound.example:" + port: http.StatusMisdirectedRequest, "10.0.0.1:" + port: http.StatusMisdirectedRequest,
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Host = host
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %s; want %d", host, resp.Status, want)
		}
	}
}

// TestPageIsSelfContained: the page loads nothing from elsewhere (the
// browser test sees it work), and says so to the browser.
func TestPageIsSelfContained(t *testing.T) {
	for _, re := range []string{`(?i)\ssrc\s*=`, `(?i)<link`, `(?i)href\s*=\s*["']?(https?:)?//`, `(?i)url\(`, `(?i)@import`, `(?i)fetch\(\s*["']https?:`} {
		if loc := regexp.MustCompile(re).FindIndex(page); loc != nil {
			t.Errorf("the page refers to something outside (%s): %q", re, page[max(loc[0]-40, 0):min(loc[1]+40, len(page))])
		}
	}
	d := New(Config{Addr: "127.0.0.1:0"})
	d.feed = newFeed(t0, time.Second, []string{"a"})
	rec := httptest.NewRecorder()
	d.handler(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}).ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/", nil))
	if csp := rec.Header().Get("Content-Security-Policy"); rec.Code != 200 || !regexp.MustCompile(`default-src 'none'.*connect-src 'self'`).MatchString(csp) {
		t.Errorf("GET /: %d, policy %q; want 200 and a policy that allows nothing from elsewhere", rec.Code, csp)
	}
}

// TestOptions: the flags fill Options; without --dashboard there is no
// observer at all (the session then wraps nothing).
func TestOptions(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs)
	if o.Observer(nil) != nil {
		t.Fatal("an observer without --dashboard")
	}
	if err := fs.Parse([]string{"--dashboard", ":8090", "--dashboard-linger", "30s"}); err != nil {
		t.Fatal(err)
	}
	if o.Addr != ":8090" || o.Linger != 30*time.Second {
		t.Errorf("options %+v", o)
	}
	if d, ok := o.Observer(nil).(*Dashboard); !ok || d.cfg.Addr != ":8090" || d.cfg.Linger != 30*time.Second {
		t.Errorf("observer %#v; want a dashboard of the options", o.Observer(nil))
	}
	for _, bad := range [][]string{{"--dashboard", "host"}, {"--dashboard", ":x"}, {"--dashboard-linger", "-1s"}, {"--dashboard-linger", "soon"}} {
		fs := pflag.NewFlagSet("y", pflag.ContinueOnError)
		(&Options{}).AddFlags(fs)
		if fs.Parse(bad) == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestFeedBeforeAnyResult: before a side has a point (a comparison's
// candidate waits for its first slice) the feed gives empty lists, never
// null, which the page would fail to read.
func TestFeedBeforeAnyResult(t *testing.T) {
	d := New(Config{Addr: "127.0.0.1:0", Window: time.Minute})
	if err := d.Start(context.Background(), session.Watch{Command: "compare", Sides: []string{"baseline", "candidate"}}); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	now := time.Now()
	d.Result("baseline", &snapshots.Result{Endpoint: "GET /x", Phase: "load", Intended: now, Done: now, Status: 200})
	body := get(t, d.URL()+"api/feed", http.StatusOK)
	if strings.Contains(body, "null") || strings.Count(body, `"points":[]`) != 4 {
		t.Errorf("feed:\n%s\nwant empty point lists for both sides and the endpoint's two sides", body)
	}
}
