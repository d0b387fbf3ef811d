package main

import (
	"cmp"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

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
