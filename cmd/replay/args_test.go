package main

import "testing"

// TestArgErrors: a wrong number of arguments is a usage error naming the
// command, what it expects and what it got.
func TestArgErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"report"}, "replay: report: expects 1 argument (a run file or a comparison's directory), got none\n"},
		{[]string{"inspect", "a", "b"}, `replay: inspect: expects 1 argument (the snapshot), got "a" "b"` + "\n"},
		{[]string{"snapshot", "export"}, "replay: snapshot export: expects 1 argument (the snapshot), got none\n"},
		{[]string{"demo", "x"}, `replay: demo: takes no arguments, got "x"` + "\n"},
		{[]string{"k8s", "collect", "y"}, `replay: k8s collect: takes no arguments, got "y"` + "\n"},
		{[]string{"merge", "--out", "m.run"}, "replay: merge: expects at least 1 argument (the shards' run files), got none\n"},
		// Usage errors cobra words itself name the command too.
		{[]string{"merge", "a.run"}, "replay: merge: required flag(s) \"out\" not set\n"},
		{[]string{"inspect", "a.snap", "--colour"}, "replay: inspect: unknown flag: --colour\n"},
		{[]string{"snapshot", "export", "a.snap", "--nope"}, "replay: snapshot export: unknown flag: --nope\n"},
	} {
		code, stdout, stderr := cliRun(t, "", tc.args...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int64]string{0: "0 calls", 1: "1 call", 2: "2 calls"} {
		if got := plural(n, "call"); got != want {
			t.Errorf("plural(%d): %q, want %q", n, got, want)
		}
	}
}
