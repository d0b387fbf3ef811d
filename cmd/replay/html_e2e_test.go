package main

import (
	"cmp"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/chromiumtest"
)

// timelineSeg is the p95 segment of one slice in the report's timeline.
var timelineSeg = regexp.MustCompile(`class="seg" data-q="p95" data-ms="[^"]*" data-side="(\w+)" data-slice="(\d+)" data-start="([^"]*)"`)

// checkReportHTML checks the HTML report of a real interleaved comparison
// of endpoints endpoints: its timeline draws both builds' slices taking
// turns, every endpoint has its charts, and (where Chromium is installed)
// the screenshot's charts are not blank.
func checkReportHTML(t *testing.T, file string, endpoints int) {
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	start := strings.Index(html, `class="chart series"`)
	if start < 0 {
		t.Fatalf("%s has no timeline", file)
	}
	timeline := html[start : start+strings.Index(html[start:], "</svg>")]
	type seg struct {
		side  string
		slice int
		start float64
	}
	var segs []seg
	for _, m := range timelineSeg.FindAllStringSubmatch(timeline, -1) {
		n, _ := strconv.Atoi(m[2])
		at, _ := strconv.ParseFloat(m[3], 64)
		segs = append(segs, seg{m[1], n, at})
	}
	slices.SortFunc(segs, func(a, b seg) int { return cmp.Compare(a.start, b.start) })
	turns, bySide := 0, map[string]int{}
	for i, s := range segs {
		bySide[s.side]++
		if i > 0 && s.side != segs[i-1].side {
			turns++
		}
	}
	if bySide["baseline"] < 3 || bySide["candidate"] < 3 || turns < bySide["baseline"] {
		t.Errorf("timeline: %v slices per side, the side changing %d times in time order; want the builds' slices taking turns", bySide, turns)
	}
	for _, kind := range []string{"dist", "series"} {
		if n := strings.Count(html, `class="chart `+kind+`"`); n < endpoints {
			t.Errorf("%d %s charts, want one per endpoint (%d)", n, kind, endpoints)
		}
	}
	if !strings.Contains(html, `class="chart sql"`) || strings.Contains(html, "`") {
		t.Errorf("no chart of SQL per request, or a raw backtick, in %s", file)
	}
	chromiumtest.CheckCharts(t, file, 2, 1+2*endpoints)
}

// TestRunHTMLCharts: `replay run --format html` against a real loopback
// app draws its one build: the timeline in windows of time, a
// distribution and a series per endpoint, in blue, not blank on screen.
func TestRunHTMLCharts(t *testing.T) {
	snap := runSnapshot(t, "GET /a", "POST /b", "GET /c/7")
	rt := newRunTarget(t, 2*time.Millisecond)
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--duration", "2500ms", "--vus", "2", "--format", "html",
		"--out", filepath.Join(t.TempDir(), "r.run"))
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Latency over time, per 1s window", `class="chart dist"`, `data-q="p95"`, `class="seg"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(stdout, `class="chart series"`); n != 4 {
		t.Errorf("%d series charts, want 4 (the run and its 3 endpoints)", n)
	}
	// 2.5 s of load in windows of 1 s: 3 or 4 windows drawn.
	start := strings.Index(stdout, `class="chart series"`)
	if start < 0 {
		t.Fatal("the page has no timeline")
	}
	timeline := stdout[start : start+strings.Index(stdout[start:], "</svg>")]
	if n := strings.Count(timeline, `data-q="p95"`); n < 3 || n > 4 {
		t.Errorf("the timeline draws %d windows, want 3 or 4 of 1 s", n)
	}
	file := filepath.Join(t.TempDir(), "run.html")
	if err := os.WriteFile(file, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	chromiumtest.CheckCharts(t, file, 1, 7)
}
