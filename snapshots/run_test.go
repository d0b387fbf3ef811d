package snapshots

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
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
		Settings: map[string]string{"vus": "10", "duration": "30s"}, Truncated: map[string]int64{"POST /upload": 3}}
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
	wiring := &Wiring{SQLAddr: "127.0.0.1:6543", SQLApp: "replay-baseline", SQLConnections: 2,
		SQLClients: []SQLClient{{App: "replay-baseline", Connections: 2, Statements: 12345}}, MockAddr: "127.0.0.1:4000", MockCalls: 40, RecordedCalls: 7,
		MockTruncated: 2, MockTruncatedServed: true}
	loadStarted := started.Add(time.Second)
	if err := w.Close(RunInfo{Ended: ended, MockMisses: 3, Statements: 12345, Wiring: wiring, Settings: map[string]string{"vus": "10"},
		LoadStarted: loadStarted, LoadEnded: ended}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wantInfo := info
	wantInfo.Ended, wantInfo.MockMisses, wantInfo.Statements, wantInfo.Wiring = ended, 3, 12345, wiring
	wantInfo.LoadStarted, wantInfo.LoadEnded = loadStarted, ended
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

// TestRunConcurrentAdd: 50 goroutines add 40 results each, with Add, with
// Pack, and with both (every other goroutine), in transactions of 64
// results: every result read back once, in order, whole.
func TestRunConcurrentAdd(t *testing.T) {
	for _, how := range []string{"add", "pack", "both"} {
		t.Run(how, func(t *testing.T) { testRunConcurrentAdd(t, how) })
	}
}

func testRunConcurrentAdd(t *testing.T, how string) {
	path := filepath.Join(t.TempDir(), "c.run")
	w, err := createRun(path, RunInfo{Name: "c"}, 64, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 50; g++ {
		pack := how == "pack" || how == "both" && g%2 == 1
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 40; i++ {
				r := sampleResult(i)
				if pack {
					w.Pack(r)
				} else {
					w.Add(r)
				}
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

// TestRunLateAndDuplicateResults writes results numbered out of order
// across transactions (so that some are late: numbered before blocks
// already written) and some numbered twice, and reads each Seq back once, in
// order, as it was first added.
func TestRunLateAndDuplicateResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "late.run")
	// Transactions of 100 results exactly: the interval never runs out.
	w, err := createRun(path, RunInfo{Name: "late"}, 100, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]*Result{}
	add := func(seq int64, url string) {
		r := sampleResult(int(seq))
		r.Seq, r.URL = seq, url
		if _, ok := want[seq]; !ok {
			want[seq] = r
		}
		w.Add(r)
	}
	for seq := int64(101); seq <= 200; seq++ { // the first transaction: blocks
		add(seq, "/first")
	}
	for seq := int64(1); seq <= 100; seq++ { // the second: all late
		add(seq, "/late")
	}
	add(150, "/again") // in a block already
	add(50, "/again")  // late already
	add(300, "/first")
	add(250, "/first")
	add(300, "/again") // twice in one transaction
	err = w.Close(RunInfo{})
	if err == nil || !strings.Contains(err.Error(), "already in the run") {
		t.Errorf("Close = %v, want an error about a Seq already in the run", err)
	}

	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := collect(t, r.Results(context.Background()))
	var wantList []*Result
	for seq := int64(1); seq <= 300; seq++ {
		if res, ok := want[seq]; ok {
			wantList = append(wantList, res)
		}
	}
	if diff := cmp.Diff(wantList, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if n, err := r.Count(context.Background()); err != nil || n != 202 {
		t.Errorf("Count = %d, %v; want 202", n, err)
	}
	var singles int
	if err := r.db.QueryRow(`SELECT count(*) FROM results WHERE n = 1`).Scan(&singles); err != nil {
		t.Fatal(err)
	}
	if singles != 100 {
		t.Errorf("%d blocks of one result, want the 100 late ones", singles)
	}
}

// TestRunRecordEdges round-trips results whose fields take the encoding's
// unusual paths: zero and out-of-order times, trace ids that are not
// lower-case hex, strings too long to intern, negative numbers.
func TestRunRecordEdges(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("x", maxInternLen+1)
	var want []*Result
	for i := 0; i < 4; i++ { // strings repeat, so that they are interned
		want = append(want,
			&Result{},
			&Result{Phase: "custom", Slice: -3, ExchangeID: -7, Endpoint: long, Method: "PURGE", URL: long,
				Intended: t0, Sent: t0.Add(-time.Hour), Done: t0.Add(-2 * time.Hour),
				Status: -1, RecordedStatus: 999, Bytes: -5, Error: "dial tcp: connection refused",
				TraceID: strings.ToUpper(fmt.Sprintf("%032x", 255)), SQLCounted: true,
				SQL: []SQLCount{{Fingerprint: long, Count: -1, Duration: -time.Second}, {Fingerprint: "", Count: 0}}},
			&Result{Phase: PhaseLoad, Sent: t0, TraceID: "not-a-trace", Error: fmt.Sprint("unique ", i),
				Intended: time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC), Done: time.Date(2200, 1, 1, 0, 0, 0, 1, time.UTC)},
			&Result{Phase: PhaseExplain, TraceID: fmt.Sprintf("%032x", i), Done: t0, SQL: []SQLCount{}},
		)
	}
	path := filepath.Join(t.TempDir(), "edges.run")
	w, err := CreateRun(path, RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range want {
		w.Add(r)
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
	// An empty SQL list reads back as nil, like any result without counts.
	for _, res := range want {
		if len(res.SQL) == 0 {
			res.SQL = nil
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var interned int
	if err := r.db.QueryRow(`SELECT count(*) FROM strings`).Scan(&interned); err != nil {
		t.Fatal(err)
	}
	// custom, PURGE, the error seen four times, load, explain: not the
	// long strings, not the errors seen once.
	if interned != 5 {
		t.Errorf("%d strings interned, want 5", interned)
	}
}

// TestRunReadWhileWriting reads a run file while its writer commits, and
// sees strings interned in later commits.
func TestRunReadWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.run")
	w, err := createRun(path, RunInfo{Name: "live"}, 0, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(RunInfo{})
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for round := 1; round <= 3; round++ {
		endpoint := fmt.Sprintf("GET /round/%d", round)
		for i := 0; i < 10; i++ {
			w.Add(&Result{Phase: PhaseLoad, Endpoint: endpoint, Status: 200})
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			n, err := r.Count(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if n == int64(round*10) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: reader sees %d results", round, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		got := collect(t, r.Results(context.Background()))
		if len(got) != round*10 || got[len(got)-1].Endpoint != endpoint || got[len(got)-1].Seq != int64(round*10) {
			t.Fatalf("round %d: read %d results, the last %+v", round, len(got), got[len(got)-1])
		}
	}
}

func TestInternerLimits(t *testing.T) {
	in := newInterner()
	ids := map[int64]string{}
	for i := 0; i < maxInterned+1000; i++ {
		s := fmt.Sprint("string ", i)
		if id, _ := in.id(manyValues, s); id != 0 {
			t.Fatalf("%q interned when first seen", s)
		}
		id, isNew := in.id(manyValues, s)
		if isNew {
			if _, dup := ids[id]; dup {
				t.Fatalf("id %d given twice", id)
			}
			ids[id] = s
		}
	}
	if len(ids) != maxInterned || in.n != maxInterned {
		t.Errorf("%d strings interned, want %d", len(ids), maxInterned)
	}
	if id, _ := in.id(fewValues, "new"); id != 0 {
		t.Errorf("a string interned beyond the limit")
	}
	// The total length is bounded too.
	big := newInterner()
	for i := 0; ; i++ {
		s := fmt.Sprintf("%0*d", maxInternLen, i)
		big.id(fewValues, s)
		if id, _ := big.id(fewValues, s); id == 0 {
			if big.bytes+len(s) <= maxInternBytes {
				t.Fatalf("%d bytes interned, and no room for %d more", big.bytes, len(s))
			}
			break
		}
	}
}

// TestRunFailedCommitKeepsStrings: a string is interned once, when a result
// first names it twice; when the transaction that stored it fails, the
// results written later still name it, so it is stored again (results
// packed by the writer, Add, and by the producer, Pack).
func TestRunFailedCommitKeepsStrings(t *testing.T) {
	for _, pack := range []bool{false, true} {
		t.Run(fmt.Sprint("pack=", pack), func(t *testing.T) { testRunFailedCommitKeepsStrings(t, pack) })
	}
}

func testRunFailedCommitKeepsStrings(t *testing.T, pack bool) {
	var commits atomic.Int64
	testCommit = func(tx driver.Tx) error {
		if commits.Add(1) == 1 {
			tx.Rollback()
			return errors.New("disk full")
		}
		return tx.Commit()
	}
	defer func() { testCommit = nil }()
	path := filepath.Join(t.TempDir(), "a.run")
	w, err := createRun(path, RunInfo{Name: "failing"}, 4, time.Hour) // commits every 4 records
	if err != nil {
		t.Fatal(err)
	}
	var want []*Result
	for i := 1; i <= 12; i++ {
		r := &Result{Phase: PhaseLoad, Endpoint: "GET /orders", Method: "GET", URL: "/orders", Status: 200}
		if pack {
			w.Pack(r)
		} else {
			w.Add(r)
		}
		if i > 4 { // the first transaction's are lost
			want = append(want, r)
		}
	}
	if err := w.Close(RunInfo{}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Close = %v, want the failed commit", err)
	}
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := collect(t, r.Results(context.Background()))
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}
