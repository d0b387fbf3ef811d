package snapshots

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunGRPCResults: a gRPC result's statuses survive a run file beside
// HTTP results, and it fails when its grpc-status is not the recorded one.
func TestRunGRPCResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.run")
	w, err := CreateRun(path, RunInfo{Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	var want []*Result
	for i := 1; i <= 40; i++ {
		r := sampleResult(i)
		if i%2 == 0 {
			r.Endpoint, r.Method = "gRPC grpc.testing.TestService/UnaryCall", "POST"
			r.GRPC, r.GRPCStatus, r.RecordedGRPCStatus = true, i%3*5, 5 // OK, NOT_FOUND, 10
			if i%10 == 0 {
				r.GRPCStatus = NoGRPCStatus
			}
		}
		w.Add(r)
		want = append(want, r)
	}
	if err := w.Close(RunInfo{}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := collect(t, r.Results(context.Background()))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		r    Result
		fail bool
	}{
		{Result{GRPC: true, Status: 200, GRPCStatus: 5, RecordedGRPCStatus: 5}, false},
		{Result{GRPC: true, Status: 200, GRPCStatus: 0, RecordedGRPCStatus: 5}, true},
		{Result{GRPC: true, Status: 200, GRPCStatus: 14, RecordedGRPCStatus: 0}, true},
		{Result{GRPC: true, Status: 200, GRPCStatus: 0, RecordedGRPCStatus: NoGRPCStatus}, false},
		{Result{GRPC: true, Status: 200, GRPCStatus: 2, RecordedGRPCStatus: NoGRPCStatus}, true},
		{Result{GRPC: true, GRPCStatus: NoGRPCStatus, Error: "connection refused"}, true},
		{Result{GRPC: true, Status: 200, Error: "timeout"}, true},
	} {
		if got := c.r.Failed(); got != c.fail {
			t.Errorf("%+v: Failed() = %v, want %v", c.r, got, c.fail)
		}
	}
}
