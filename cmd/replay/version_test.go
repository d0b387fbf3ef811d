package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `replay version` and `replay --version` print one line with
// the version and the toolchain (and, in a binary built from a checkout by
// `make build`, the VCS revision and time); extra arguments are a usage
// error.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := cliRun(t, "", args...)
		if code != exitOK || !strings.HasPrefix(stdout, "replay ") || !strings.Contains(stdout, runtime.Version()) ||
			strings.Count(stdout, "\n") != 1 || stderr != "" {
			t.Errorf("replay %s: exit %d, stdout %q, stderr %q; want one line \"replay VERSION (… %s)\"", args[0], code, stdout, stderr, runtime.Version())
		}
	}
	if code, _, stderr := cliRun(t, "", "version", "x"); code != exitUsage || !strings.Contains(stderr, `version: takes no arguments, got "x"`) {
		t.Errorf("replay version x: exit %d, stderr %q; want a usage error", code, stderr)
	}
}
