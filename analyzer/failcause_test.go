package analyzer

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestClassifyFailure(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    string
		exited bool
		want   string
	}{
		{503, "", false, FailServerError},
		{404, "", false, FailStatus},
		{0, "Get \"http://127.0.0.1:1/a\": dial tcp 127.0.0.1:1: connect: connection refused", false, FailRefused},
		{0, "dial tcp 127.0.0.1:1: connect: connection refused", true, FailBuildExited},
		{0, "read tcp 127.0.0.1:5->127.0.0.1:6: read: connection reset by peer", false, FailClosed},
		{0, "unexpected EOF", true, FailBuildExited},
		{0, "timeout: no complete response within 30s", false, FailTimeout},
		{0, "not sent: target stalled", false, FailNotSent},
		{0, "tls: bad certificate", false, FailOther},
	} {
		if got := ClassifyFailure(tc.status, tc.err, tc.exited); got != tc.want {
			t.Errorf("ClassifyFailure(%d, %q, %v) = %q; want %q", tc.status, tc.err, tc.exited, got, tc.want)
		}
	}
}

func TestCheckFailures(t *testing.T) {
	s := &Summary{
		Info: snapshots.RunInfo{MockMisses: 7, StatementErrors: 3, Wiring: &snapshots.Wiring{SQLUpstreamErrors: 2}},
		Overall: &EndpointSummary{Requests: 200, Failed: 60, Failures: []FailureCount{
			{Error: "dial tcp 127.0.0.1:9: connect: connection refused", Count: 30},
			{Status: 503, Count: 20},
			{Status: 500, Count: 5},
			{Error: "timeout: no complete response within 1s", Count: 4},
		}},
	}
	exit := &BuildExit{How: "exited with status 2", LastLines: []string{"panic: out of memory"}}
	got := CheckFailures(s, DefaultMaxFailed, exit)
	want := &FailureCheck{MaxFailed: 0.01, Rate: 0.3, Failed: true, Causes: []FailureCause{
		{Kind: FailBuildExited, Count: 30, Detail: "exited with status 2", LastLines: []string{"panic: out of memory"}},
		{Kind: FailServerError, Count: 25, Detail: "503 Service Unavailable ×20, 500 Internal Server Error ×5"},
		{Kind: FailTimeout, Count: 4},
		{Kind: FailOther, Count: 1}, // failed but not among Overall.Failures
		{Kind: FailMockMiss, Count: 7},
		{Kind: FailDatabase, Count: 3},
		{Kind: FailSQLUpstream, Count: 2},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("CheckFailures (-want +got):\n%s", d)
	}
	if w := got.Why(); w != "30% of requests failed (at most 1% may)" {
		t.Errorf("Why() = %q", w)
	}

	// Without the exit, refused connections are named as such; within the
	// limit the check passes, and zero allows none.
	s.Overall.Failed, s.Overall.Requests = 1, 200
	s.Overall.Failures = []FailureCount{{Error: "dial tcp 127.0.0.1:9: connect: connection refused", Count: 1}}
	if c := CheckFailures(s, DefaultMaxFailed, nil); c.Failed || c.Causes[0].Kind != FailRefused || c.Why() != "" {
		t.Errorf("0.5%% failed, limit 1%%: %+v", c)
	}
	if c := CheckFailures(s, 0, nil); !c.Failed {
		t.Errorf("0.5%% failed, limit 0: passed")
	}
}

func TestParseMaxFailed(t *testing.T) {
	for in, want := range map[string]float64{"1%": 0.01, "0.5%": 0.005, "0.02": 0.02, "0": 0, "100%": 1} {
		if got, err := ParseMaxFailed(in); err != nil || got != want {
			t.Errorf("ParseMaxFailed(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "x", "-1%", "150%", "2"} {
		if _, err := ParseMaxFailed(in); err == nil {
			t.Errorf("ParseMaxFailed(%q): no error", in)
		}
	}
}

// TestPassedThroughMisses: a mock that passed its misses through names the
// calls the real upstream did not answer, not the misses, and raises no
// mock-misses wiring fault; answered with errors, the misses are both.
func TestPassedThroughMisses(t *testing.T) {
	w := &snapshots.Wiring{MockAddr: "127.0.0.1:4000", MockCalls: 50, MockPassthroughErrors: 40}
	s := &Summary{
		Info:    snapshots.RunInfo{Name: "run", MockMisses: 50, Wiring: w, Settings: map[string]string{"on_miss": "passthrough"}},
		Overall: &EndpointSummary{Requests: 50, Failed: 40, Failures: []FailureCount{{Status: 502, Count: 40}}},
	}
	got := CheckFailures(s, DefaultMaxFailed, nil).Causes
	want := []FailureCause{
		{Kind: FailServerError, Count: 40, Detail: "502 Bad Gateway ×40"},
		{Kind: FailUpstream, Count: 40},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("causes (-want +got):\n%s", d)
	}
	if c := got[1].String(); c != "upstream unreachable: 40 upstream calls the mock passed through got no answer from the real upstream" {
		t.Errorf("String() = %q", c)
	}
	if f := RunFaults(s.Info); len(f) != 0 {
		t.Errorf("faults of passed-through misses: %q", f)
	}
	s.Info.Settings["on_miss"] = "error"
	w.MockPassthroughErrors = 0
	got = CheckFailures(s, DefaultMaxFailed, nil).Causes
	if len(got) != 2 || got[1].Kind != FailMockMiss || got[1].Count != 50 {
		t.Errorf("misses answered with errors: %+v", got)
	}
	if f := RunFaults(s.Info); len(f) != 1 || f[0].Kind != FaultMockMisses {
		t.Errorf("faults of misses answered with errors: %q", f)
	}
}

// TestGRPCFailuresByStatus: gRPC calls that ended with another status
// than recorded are failures named by the status, "gRPC UNAVAILABLE ×3";
// a call that ended with its recorded error status is no failure.
func TestGRPCFailuresByStatus(t *testing.T) {
	t0 := time.Now()
	var rs []*snapshots.Result
	add := func(n, code, recorded int) {
		for range n {
			rs = append(rs, &snapshots.Result{Phase: snapshots.PhaseLoad, Endpoint: "gRPC route.Routes/Find", Method: "POST",
				Intended: t0, Sent: t0, Done: t0.Add(time.Millisecond), Status: 200, RecordedStatus: 200,
				GRPC: true, GRPCStatus: code, RecordedGRPCStatus: recorded})
		}
	}
	add(90, 0, 0)
	add(4, 5, 5)  // NOT_FOUND as recorded
	add(3, 14, 0) // UNAVAILABLE
	add(1, 0, 5)  // OK where NOT_FOUND was recorded
	s, err := Summarize(context.Background(), snapshots.RunInfo{}, fromSlice(rs), SummarizeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := CheckFailures(s, DefaultMaxFailed, nil)
	var causes []string
	for _, c := range got.Causes {
		causes = append(causes, c.String())
	}
	if want := []string{"gRPC UNAVAILABLE ×3", "gRPC OK ×1"}; !slices.Equal(causes, want) || s.Overall.Failed != 4 {
		t.Errorf("causes %q (%d failed), want %q (4 failed)", causes, s.Overall.Failed, want)
	}
}
