package report

import (
	"bytes"
	"os"
	"path/filepath"
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
			chromiumtest.CheckCharts(t, file, tt.sides, 4)
		})
	}
}
