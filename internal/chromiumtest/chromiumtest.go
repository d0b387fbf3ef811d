// Package chromiumtest renders pages in headless Chromium for tests: a
// screenshot of the whole page and the boxes of its elements, to check in
// pixels that what a report draws is there.
//
// It is for tests only: it imports "testing", so nothing in the replay
// binary may import it. A test that uses it skips only when no Chromium
// is installed (Path).
package chromiumtest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// EnvPath names the environment variable that, when set, is the Chromium
// to run.
const EnvPath = "REPLAY_CHROMIUM"

// Path returns the Chromium to run: $REPLAY_CHROMIUM, else the first of
// chromium-headless-shell (Debian's package puts it in /usr/bin),
// chromium, chromium-browser and google-chrome found; it skips the test
// when there is none.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvPath); p != "" {
		return p
	}
	for _, name := range []string{"chromium-headless-shell", "/usr/bin/chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium installed (chromium-headless-shell, chromium or google-chrome; or set " + EnvPath + ")")
	return ""
}

// Box is where an element lies on the screenshot, in its pixels.
type Box struct {
	X, Y, W, H float64
	// Class and Label are the class and aria-label attributes of the
	// element, or of the <svg> it is in.
	Class, Label string
}

// Rect is the box as an image rectangle.
func (b Box) Rect() image.Rectangle {
	return image.Rect(int(b.X), int(b.Y), int(b.X+b.W), int(b.Y+b.H))
}

// Shot loads the HTML file in headless Chromium with a viewport width
// pixels wide and returns a screenshot of the whole page (as tall as the
// page) and the boxes of the elements selector matches. The page runs
// with JavaScript as Chromium has it; the boxes are read by the test, not
// by the page.
func Shot(t testing.TB, file string, width int, selector string) (image.Image, []Box) {
	t.Helper()
	path := Path(t)
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(width, 800), chromedp.Flag("hide-scrollbars", true), chromedp.Flag("disable-gpu", true))
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(width), 800), chromedp.Navigate("file://"+abs)); err != nil {
		t.Fatalf("chromium %s: load %s: %v", path, file, err)
	}
	height, err := chromedp.Run(bctx, chromedp.Evaluate[float64](`document.documentElement.scrollHeight`))
	if err != nil {
		t.Fatalf("page height: %v", err)
	}
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(width), int64(height))); err != nil {
		t.Fatalf("viewport %dx%v: %v", width, height, err)
	}
	boxes, err := chromedp.Run(bctx, chromedp.Evaluate[[]Box](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => {
		const r = e.getBoundingClientRect();
		const o = e.closest("svg") || e;
		return {X: r.x + scrollX, Y: r.y + scrollY, W: r.width, H: r.height, Class: o.getAttribute("class") || "", Label: o.getAttribute("aria-label") || ""};
	})`, selector)))
	if err != nil {
		t.Fatalf("boxes of %s: %v", selector, err)
	}
	buf, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	// REPLAY_SCREENSHOT_DIR keeps the screenshots (and CheckCharts the
	// pages), for a person to look at.
	if dir := os.Getenv("REPLAY_SCREENSHOT_DIR"); dir != "" {
		name := filepath.Join(dir, filepath.Base(file)+".png")
		if err := os.WriteFile(name, buf, 0o644); err == nil {
			t.Logf("screenshot: %s", name)
		}
	}
	return img, boxes
}

// Count counts the pixels inside r for which match holds (8-bit channels).
func Count(img image.Image, r image.Rectangle, match func(r, g, b uint8) bool) int {
	n := 0
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if match(uint8(cr>>8), uint8(cg>>8), uint8(cb>>8)) {
				n++
			}
		}
	}
	return n
}

// Ink is a pixel that is not (near) white.
func Ink(r, g, b uint8) bool { return int(r)+int(g)+int(b) < 3*235 }

// Blue is a clearly blue pixel: the candidate's colour (#0969da) and its
// light fills.
func Blue(r, g, b uint8) bool { return int(b) > int(r)+40 && int(b) > int(g)+20 }

// Orange is the baseline's colour (#e36209) and its light fills.
func Orange(r, g, b uint8) bool { return r > 180 && int(r) > int(g)+30 && int(g) > int(b)+20 }

// Red is the failures' colour (#cf222e).
func Red(r, g, b uint8) bool { return r > 150 && g < 90 && b < 90 }

// CheckCharts screenshots replay's HTML report in file and checks that
// it has at least minCharts charts, each laid out on the page and not
// blank: within its drawing area (legends and labels left out), ink over
// 1% of it and the data colours of each side (blue; with two sides,
// orange too): distributions fill their bins, series draw their slices,
// bar charts their bars. The page is shown with the distributions'
// quantile markers and interval hidden, so that only the bins count
// there.
func CheckCharts(t *testing.T, file string, sides, minCharts int) {
	t.Helper()
	page, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("REPLAY_SCREENSHOT_DIR"); dir != "" {
		_ = os.WriteFile(filepath.Join(dir, filepath.Base(file)), page, 0o644) // to look at
	}
	binsOnly := strings.TrimSuffix(file, ".html") + "-bins.html"
	page = bytes.Replace(page, []byte("</head>"), []byte("<style>svg.chart .q,svg.chart .ci{display:none}</style></head>"), 1)
	if err := os.WriteFile(binsOnly, page, 0o644); err != nil {
		t.Fatal(err)
	}
	img, boxes := Shot(t, binsOnly, 1150, "svg.chart .area")
	if len(boxes) < minCharts {
		t.Fatalf("%d charts on the page, want at least %d", len(boxes), minCharts)
	}
	for _, b := range boxes {
		r := b.Rect()
		if r.Dx() < 300 || r.Dy() < 20 || !r.In(img.Bounds()) {
			t.Errorf("%s (%s): drawing area %v on a page of %v", b.Label, b.Class, r, img.Bounds())
			continue
		}
		ink := Count(img, r, Ink)
		blue := Count(img, r, Blue)
		orange := Count(img, r, Orange)
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
