package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/chromiumtest"
)

// TestHTMLScreenshot renders the comparison and run pages in headless
// Chromium and checks in the screenshot's pixels that every chart drew
// its data: the candidate's blue (a run's build) and the baseline's orange
// in each chart of a comparison that has both.
func TestHTMLScreenshot(t *testing.T) {
	chromiumtest.Path(t)
	dir := t.TempDir()
	for _, tt := range []struct {
		name   string
		render func(*bytes.Buffer) error
		sides  int
	}{
		{"compare.html", func(b *bytes.Buffer) error { return ComparisonHTML(b, comparisonFixture(t)) }, 2},
		{"run.html", func(b *bytes.Buffer) error { return RunHTML(b, runFixture(t)) }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.render(&b); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, tt.name)
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			CheckChartPixels(t, file, tt.sides, 4)
		})
	}
}

// CheckChartPixels screenshots the HTML report in file and checks that
// it has at least minCharts charts, each laid out on the page and not
// blank: within its drawing area (legends and labels left out), ink over
// 1% of it and the data colours of each side (blue; with two sides,
// orange too): distributions fill their bins, series draw their slices,
// bar charts their bars. The page is shown with the distributions'
// quantile markers and interval hidden, so that only the bins count
// there.
func CheckChartPixels(t *testing.T, file string, sides, minCharts int) {
	t.Helper()
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	binsOnly := strings.TrimSuffix(file, ".html") + "-bins.html"
	page = bytes.Replace(page, []byte("</head>"), []byte("<style>svg.chart .q,svg.chart .ci{display:none}</style></head>"), 1)
	if err := os.WriteFile(binsOnly, page, 0o644); err != nil {
		t.Fatal(err)
	}
	img, boxes := chromiumtest.Shot(t, binsOnly, 1150, "svg.chart .area")
	if len(boxes) < minCharts {
		t.Fatalf("%d charts on the page, want at least %d", len(boxes), minCharts)
	}
	for _, b := range boxes {
		r := b.Rect()
		if r.Dx() < 300 || r.Dy() < 20 || !r.In(img.Bounds()) {
			t.Errorf("%s (%s): drawing area %v on a page of %v", b.Label, b.Class, r, img.Bounds())
			continue
		}
		ink := chromiumtest.Count(img, r, chromiumtest.Ink)
		blue := chromiumtest.Count(img, r, chromiumtest.Blue)
		orange := chromiumtest.Count(img, r, chromiumtest.Orange)
		area := r.Dx() * r.Dy()
		want := 20 // bars: thin, and a zero is a 1-pixel sliver
		switch {
		case strings.Contains(b.Class, "dist"):
			want = 500
		case strings.Contains(b.Class, "series"):
			want = 100
		}
		if ink*100 < area || blue < want || (sides == 2 && orange < want) {
			t.Errorf("%s (%s): %d ink pixels of %d, %d blue, %d orange; want 1%% ink and %d of each side's colour",
				b.Label, b.Class, ink, area, blue, orange, want)
		} else {
			t.Logf("%s (%s): %d ink pixels of %d, %d blue, %d orange", b.Label, b.Class, ink, area, blue, orange)
		}
	}
}
