package snapshots

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunUpstream: the upstream calls of each result, and whether they were
// counted, survive a run file; results without any read with none.
func TestRunUpstream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "u.run")
	w, err := CreateRun(path, RunInfo{Name: "u"})
	if err != nil {
		t.Fatal(err)
	}
	var want []*Result
	for i := 1; i <= 300; i++ {
		r := sampleResult(i)
		r.UpstreamCounted = i%4 != 0
		if i%3 == 0 {
			r.Upstream = []UpstreamCount{
				{Service: "catalog.test", Endpoint: "GET /products/{id}", Count: i % 20, Duration: time.Duration(i) * time.Millisecond},
				{Service: "pay.test:8443", Endpoint: "POST /charges", Count: 1, Misses: 1},
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
	if n := got[2].UpstreamCalls(); n != 4 {
		t.Errorf("UpstreamCalls = %d, want 4", n)
	}
}

func TestUpstreamService(t *testing.T) {
	for _, tt := range []struct{ in, scheme, want string }{
		{"catalog.test:443", "https", "catalog.test"},
		{"catalog.test:80", "http", "catalog.test"},
		{"catalog.test:443", "http", "catalog.test:443"},
		{"catalog.test:8443", "https", "catalog.test:8443"},
		{"[::1]:80", "http", "[::1]"},
		{"nohost", "http", "nohost"},
	} {
		if got := UpstreamService(tt.in, tt.scheme); got != tt.want {
			t.Errorf("UpstreamService(%q, %q) = %q, want %q", tt.in, tt.scheme, got, tt.want)
		}
	}
}
