package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replaykit/replay/replayer"
)

func TestCompareProgressLine(t *testing.T) {
	var b bytes.Buffer
	pl := NewCompareProgress(&b)
	pl.Update(replayer.CompareProgress{Side: "baseline", Phase: "load", Slice: 1, Slices: 10, Progress: replayer.Progress{Done: 100, Failures: 1, Final: true}})
	pl.Update(replayer.CompareProgress{Side: "candidate", Phase: "load", Slice: 1, Slices: 10, Progress: replayer.Progress{Done: 90, Final: true}})
	pl.Update(replayer.CompareProgress{Side: "baseline", Phase: "load", Slice: 2, Slices: 10, Progress: replayer.Progress{Done: 40, Failures: 2, Rate: 200}})
	pl.Clear()
	lines := strings.Split(b.String(), "\r\033[K")
	if last := lines[len(lines)-2]; !strings.HasSuffix(last, "baseline  load    slice 2/10  140 requests, 3 failed  200/s") {
		t.Errorf("last progress line %q, want the baseline's requests so far (100 + 40) and failures (1 + 2)", last)
	}
	if lines[len(lines)-1] != "" {
		t.Errorf("clear left %q", lines[len(lines)-1])
	}
}
