package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRunMockErrorPrefixOnce: an error of the mock names it once
// ("run: mock: …", not "run: mock: mock: …").
func TestRunMockErrorPrefixOnce(t *testing.T) {
	snap := runSnapshot(t, "GET /orders")
	tg := newRunTarget(t, 0)
	code, _, stderr := replayRun(t, "--snapshot", snap, "--out", filepath.Join(t.TempDir(), "r.run"), "--target", tg.URL,
		"--mock", "nope.test:443", "--ca-dir", t.TempDir())
	if code != exitError || !strings.Contains(stderr, "mock: service not in the recording: nope.test:443") || strings.Contains(stderr, "mock: mock:") {
		t.Errorf("exit %d, stderr %q; want exit 1 and the mock named once", code, stderr)
	}
	// replay mock --serve of a service not recorded: the same.
	snap = mockSnapshot(t)
	code, _, stderr = cliRun(t, "", "mock", "--snapshot", snap, "--serve", "127.0.0.1:0=nope.test:80", "--ca-dir", t.TempDir())
	if code != exitUsage || !strings.Contains(stderr, "--serve 127.0.0.1:0=nope.test:80: mock: service not in the recording: nope.test:80") || strings.Count(stderr, "mock: ") != 1 {
		t.Errorf("mock --serve: exit %d, stderr %q; want exit 2 and the mock named once", code, stderr)
	}
}
