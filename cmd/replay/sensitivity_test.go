package main

import (
	"strings"
	"testing"
)

// TestCompareSensitivityFlags: --min-change and --confidence are validated
// with one-line usage errors and reach the analysis (the Ran line states
// them).
func TestCompareSensitivityFlags(t *testing.T) {
	dir := t.TempDir()
	base, cand := goldenRuns(t, dir)
	for _, tt := range []struct{ args []string }{
		{[]string{"--min-change", "ten"}},
		{[]string{"--min-change", "10%,20%"}},
		{[]string{"--confidence", "95"}},
	} {
		code, _, stderr := replayCompare(t, append([]string{base, cand}, tt.args...)...)
		if code != exitUsage || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.args[0]) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line naming %s", tt.args, code, stderr, tt.args[0])
		}
	}
	_, stdout, stderr := replayCompare(t, base, cand, "--min-change", "20%,8ms", "--confidence", "0.95")
	if !strings.Contains(stdout, "min change 20% and 8 ms at 95% confidence") {
		t.Errorf("stdout does not state the sensitivity:\n%s\nstderr %s", stdout, stderr)
	}
}
