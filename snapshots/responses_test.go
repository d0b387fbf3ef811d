package snapshots

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func sampleResponse(i int) *ResponseSample {
	s := &ResponseSample{
		ExchangeID: int64(i%7 + 1), Endpoint: "GET /orders", Phase: PhaseLoad, Status: 200,
		Body: fmt.Appendf(nil, `{"id":%d,"items":[1,2,3]}`, i), Header: http.Header{"Content-Type": {"application/json"}},
	}
	s.BodySize = int64(len(s.Body))
	switch i % 4 {
	case 1:
		s.Phase = PhaseExplain
	case 2:
		s.Header = nil
		s.Body, s.BodySize, s.Status = nil, 0, 204
	case 3:
		s.Body, s.BodySize, s.Truncated = []byte{0, 1, 2, 0xff}, 70000, true
		s.Header["Cache-Control"] = []string{"no-store", "private"}
	}
	return s
}

// TestRunResponses: response samples and hashes written among results by
// concurrent producers read back as written, samples in the order added
// and hashes added in chunks summed per key; the results are untouched.
func TestRunResponses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.run")
	w, err := CreateRun(path, RunInfo{Name: "responses"})
	if err != nil {
		t.Fatal(err)
	}
	var want []*ResponseSample
	var results []*Result
	for i := 1; i <= 300; i++ {
		r := sampleResult(i)
		w.Add(r)
		results = append(results, r)
		if i%3 == 0 {
			s := sampleResponse(i)
			w.AddResponse(s)
			want = append(want, s)
		}
	}
	// Hashes in chunks, from several goroutines, reusing the slice.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]ResponseHash, 0, 2)
			for k := range 10 {
				buf = append(buf[:0],
					ResponseHash{ExchangeID: int64(k), Endpoint: "GET /orders", Status: 200, Hash: 1<<63 + uint64(k), Count: int64(g + 1)},
					ResponseHash{ExchangeID: int64(k), Endpoint: "GET /orders", Status: 500, Hash: 42, Count: 1})
				w.AddResponseHashes(buf)
			}
		}()
	}
	wg.Wait()
	w.AddResponseHashes(nil)
	w.AddResponse(nil)
	if err := w.Close(RunInfo{}); err != nil {
		t.Fatal(err)
	}

	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []*ResponseSample
	if err := r.Responses(func(s *ResponseSample) error { got = append(got, s); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("responses (-want +got):\n%s", diff)
	}
	hashes := map[ResponseHash]int64{}
	if err := r.ResponseHashes(func(h ResponseHash) error {
		n := h.Count
		h.Count = 0
		if hashes[h] != 0 {
			t.Errorf("hash %+v yielded twice", h)
		}
		hashes[h] = n
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(hashes) != 20 {
		t.Errorf("%d distinct hashes, want 20: %v", len(hashes), hashes)
	}
	for k := range 10 {
		big := ResponseHash{ExchangeID: int64(k), Endpoint: "GET /orders", Status: 200, Hash: 1<<63 + uint64(k)}
		small := ResponseHash{ExchangeID: int64(k), Endpoint: "GET /orders", Status: 500, Hash: 42}
		if hashes[big] != 1+2+3+4 || hashes[small] != 4 {
			t.Errorf("exchange %d: counts %d and %d, want 10 and 4", k, hashes[big], hashes[small])
		}
	}
	if diff := cmp.Diff(results, collect(t, r.Results(context.Background()))); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	// fn's error stops the walk and comes back as is.
	stop := errors.New("stop")
	n := 0
	if err := r.Responses(func(*ResponseSample) error { n++; return stop }); err != stop || n != 1 {
		t.Errorf("Responses with fn failing: %v after %d calls", err, n)
	}
	if err := r.ResponseHashes(func(ResponseHash) error { return stop }); err != stop {
		t.Errorf("ResponseHashes with fn failing: %v", err)
	}
}

// TestRunResponsesOlderFile: a run file written before responses were kept
// has no such tables; it reads as holding none, without an error.
func TestRunResponsesOlderFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.run")
	w, err := CreateRun(path, RunInfo{Name: "old"})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(sampleResult(1))
	w.AddResponse(sampleResponse(1))
	if err := w.Close(RunInfo{}); err != nil {
		t.Fatal(err)
	}
	setVersion(t, path, "2", `DROP TABLE responses`, `DROP TABLE response_hashes`)
	r, err := OpenRun(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	calls := 0
	if err := r.Responses(func(*ResponseSample) error { calls++; return nil }); err != nil {
		t.Errorf("Responses of an older run file: %v", err)
	}
	if err := r.ResponseHashes(func(ResponseHash) error { calls++; return nil }); err != nil {
		t.Errorf("ResponseHashes of an older run file: %v", err)
	}
	if calls != 0 {
		t.Errorf("%d responses or hashes in a file without the tables", calls)
	}
	if got := collect(t, r.Results(context.Background())); len(got) != 1 {
		t.Errorf("%d results, want 1", len(got))
	}
}
