package dashboard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/session"
)

// chromium is the headless browser the page is checked in.
const chromium = "/usr/bin/chromium-headless-shell"

// dumpDOM loads url in headless Chromium, lets the page's script run for
// budget of virtual time (it polls the feed every second) and returns the
// DOM it built.
func dumpDOM(t *testing.T, url string, budget time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget="+strconv.Itoa(int(budget.Milliseconds())), "--dump-dom", url)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	return string(out)
}

// text returns the text of the element with id in dom ("" when none).
func text(dom, id string) string {
	m := regexp.MustCompile(`id="` + regexp.QuoteMeta(id) + `"[^>]*>([^<]*)<`).FindStringSubmatch(dom)
	if m == nil {
		return ""
	}
	return m[1]
}

func number(t *testing.T, dom, id string) int64 {
	t.Helper()
	s := strings.ReplaceAll(text(dom, id), ",", "")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("element %s holds %q, not a number; page:\n%.2000s", id, s, dom)
	}
	return n
}

// TestPageInChromium: headless Chromium loads the dashboard during a real
// run; its script fills in the figures, which grow from one load of the
// page to the next, draws the charts and lists the endpoints; once the run
// is done the page links to the HTML report.
func TestPageInChromium(t *testing.T) {
	if _, err := os.Stat(chromium); err != nil {
		t.Skipf("no headless Chromium at %s", chromium)
	}
	target := newApp(t, 2*time.Millisecond)
	d := New(Config{Addr: "127.0.0.1:0", Window: 250 * time.Millisecond})
	defer d.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	errc := make(chan error, 1)
	start := make(chan struct{})
	go func() {
		_, err := session.Run(ctx, session.RunConfig{
			Config: session.Config{Inbound: inbound(), Observer: d},
			Side:   session.SideConfig{Name: "run", URL: target.URL, RunPath: filepath.Join(t.TempDir(), "run.db")},
			Plan:   replayer.LoadPlan{VUs: 2, Duration: 8 * time.Second},
			Ready:  func(string) { close(start) },
		})
		errc <- err
	}()
	<-start
	url := waitURL(t, d)
	waitFor(t, url, "load requests", func(f Feed) bool { return len(f.Sides) == 1 && f.Sides[0].Totals.Requests > 0 })

	first := dumpDOM(t, url, 1500*time.Millisecond)
	if s := text(first, "state"); s != "running" {
		t.Errorf("state on the page = %q; want running\n%.3000s", s, first)
	}
	if now := text(first, "now"); !strings.Contains(now, "run · load") {
		t.Errorf("the page says %q; want the side and phase, run · load", now)
	}
	n1 := number(t, first, "v-run-requests")
	second := dumpDOM(t, url, 1500*time.Millisecond)
	n2 := number(t, second, "v-run-requests")
	if n1 <= 0 || n2 <= n1 {
		t.Errorf("requests on the page: %d, then %d; want them growing", n1, n2)
	}
	for _, want := range []string{`data-endpoint="GET /orders"`, `data-endpoint="GET /orders/{id}"`} {
		if !strings.Contains(second, want) {
			t.Errorf("the endpoints table has no row %s", want)
		}
	}
	for _, id := range []string{"c-latency", "c-rate", "c-endpoint"} {
		svg := regexp.MustCompile(`(?s)<svg id="` + id + `".*?</svg>`).FindString(second)
		if strings.Count(svg, "<path") == 0 || strings.Count(svg, "<circle") < 2 {
			t.Errorf("chart %s draws no line:\n%.600s", id, svg)
		}
	}
	if p95 := text(second, "v-run-p95"); p95 == "" || p95 == "–" {
		t.Errorf("p95 on the page = %q; want a figure", p95)
	}

	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	last := dumpDOM(t, url, 500*time.Millisecond)
	if s := text(last, "state"); s != "done" {
		t.Errorf("state on the page after the run = %q; want done", s)
	}
	if !regexp.MustCompile(`<a href="/report" id="report-link"[^>]*>Open the HTML report</a>`).MatchString(last) {
		t.Errorf("the page after the run does not link to the report:\n%.3000s", last)
	}
	if v := text(last, "verdict"); v != "passed" {
		t.Errorf("verdict on the page = %q; want passed", v)
	}
	if n := number(t, last, "v-run-requests"); n != side(t, getFeed(t, url, -1), "run").Totals.Requests {
		t.Errorf("the page shows %d requests at the end; the feed %d", n, side(t, getFeed(t, url, -1), "run").Totals.Requests)
	}
}
