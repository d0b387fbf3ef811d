package main

import (
	"strings"
	"testing"
)

// TestLimitFlagsHelp: every command that listens shows its connection
// limits with their defaults in --help, --max-conns's 4096 included.
func TestLimitFlagsHelp(t *testing.T) {
	http := map[string]string{"--max-conns": "(default 4096)", "--read-header-timeout": "(default 10s)", "--idle-timeout": "(default 2m0s)"}
	sql := map[string]string{"--max-conns": "(default 4096)", "--sql-startup-timeout": "(default 10s)", "--sql-idle-timeout": "(default 30m0s)"}
	for _, cmd := range []string{"run", "compare", "record", "mock", "sqlcount"} {
		want := map[string]string{}
		if cmd != "sqlcount" {
			for k, v := range http {
				want[k] = v
			}
		}
		if cmd != "mock" {
			for k, v := range sql {
				want[k] = v
			}
		}
		code, stdout, _ := cliRun(t, "", cmd, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		for flag, def := range want {
			line := ""
			for _, l := range strings.Split(stdout, "\n") {
				if strings.HasPrefix(l, "  ") && strings.HasPrefix(strings.TrimSpace(l), flag+" ") { // a flag line, not the long help
					line = l
				}
			}
			if !strings.HasSuffix(line, def) {
				t.Errorf("%s --help: %s line %q, want it to end %q", cmd, flag, line, def)
			}
		}
	}
}
