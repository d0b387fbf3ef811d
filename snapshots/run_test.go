package snapshots

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sampleResult(i int) *Result {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)
	r := &Result{
		Phase: PhaseLoad, Slice: i % 3, ExchangeID: int64(i%7 + 1), Endpoint: "GET /orders",
		Method: "GET", URL: fmt.Sprintf("/orders?page=%d", i),
		Intended: t0, Sent: t0.Add(50 * time.Microsecond), Done: t0.Add(time.Duration(i%20+1) * time.Millisecond),
		Status: 200, RecordedStatus: 200, Bytes: int64(100 + i), TraceID: fmt.Sprintf("%032x", i),
		SQLCounted: i%2 == 0,
	}
	if i%2 == 0 {
		r.SQL = []SQLCount{
			{Fingerprint: "SELECT * FROM orders ORDER BY id DESC LIMIT ?", Count: 1, Duration: 300 * time.Microsecond},
			{Fingerprint: "SELECT count(*) FROM order_items WHERE order_id = ?", Count: 50, Duration: 2 * time.Millisecond},
		}
	}
	if i%10 == 9 {
		r.Phase, r.Status, r.Error, r.Done = PhaseExplain, 0, "timeout", time.Time{}
	}
	return r
}

func TestRunRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.run")
	started := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	info := RunInfo{Name: "baseline", Snapshot: "orders.snap", Target: "http://127.0.0.1:8080", Started: started,
		Settings: map[string]string{"vus": "10", "duration": "30s"}}
	w, err := CreateRun(path, info)
	if err != nil {
		t.Fatal(err)
	}
	var want []*Result
	for i := 1; i <= 500; i++ {
		r := sampleResult(i)
		w.Add(r)
		want = append(want, r)
	}
	ended := started.Add(31 * time.Second)
	if err := w.Close(RunInfo{Ended: ended, MockMisses: 3, Statements: 12345, Settings: map[string]string{"vus": "10"}}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wantInfo := info
	wantInfo.Ended, wantInfo.MockMisses, wantInfo.Statements = ended, 3, 12345
	wantInfo.Settings = map[string]string{"vus": "10"}
	if diff := cmp.Diff(wantInfo, r.Info()); diff != "" {
		t.Errorf("info (-want +got):\n%s", diff)
	}
	got := collect(t, r.Results(context.Background()))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n, err := r.Count(context.Background()); err != nil || n != 500 {
		t.Errorf("Count = %d, %v", n, err)
	}
	// Stopping early is fine, and leaves the file usable.
	for res, err := range r.Results(context.Background()) {
		if err != nil || res.Seq != 1 {
			t.Fatalf("first result: %v %v", res, err)
		}
		break
	}
	if n, err := r.Count(context.Background()); err != nil || n != 500 {
		t.Errorf("Count after a stopped iteration = %d, %v", n, err)
	}
}

func TestRunConcurrentAdd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.run")
	w, err := CreateRun(path, RunInfo{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				r := sampleResult(i)
				w.Add(r)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(RunInfo{}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var seq int64
	sqlTotal := 0
	for res, err := range r.Results(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		seq++
		if res.Seq != seq {
			t.Fatalf("seq %d where %d was expected", res.Seq, seq)
		}
		sqlTotal += res.Statements()
	}
	if seq != 2000 {
		t.Errorf("%d results, want 2000", seq)
	}
	if sqlTotal != 50*20*51 {
		t.Errorf("statements %d, want %d", sqlTotal, 50*20*51)
	}
	if r.Info().Ended.IsZero() {
		t.Errorf("Close with a zero Ended did not set it")
	}
}
