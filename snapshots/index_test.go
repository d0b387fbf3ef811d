package snapshots

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRequestsAndAnswers reads a varied snapshot's exchanges by ID, in an
// order of its own with an unknown ID among them: each comes back in that
// order with the fields it promises equal to Exchange's, the others zero.
func TestRequestsAndAnswers(t *testing.T) {
	s, err := Open(variedSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	var all []*Exchange
	for e, err := range s.Exchanges(ctx, Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e)
	}
	var ids []int64
	for i := len(all) - 1; i >= 0; i-- {
		ids = append(ids, all[i].ID)
	}
	ids = slices.Insert(ids, 1, 99999)
	requests := func(e *Exchange) *Exchange {
		r := &Exchange{ID: e.ID, Direction: e.Direction, Start: e.Start, Duration: e.Duration, Method: e.Method, URL: e.URL,
			Proto: e.Proto, RequestHeader: e.RequestHeader, RequestBody: e.RequestBody, Status: e.Status, Endpoint: e.Endpoint,
			ResponseTrailer: e.ResponseTrailer, Messages: e.Messages}
		if e.Proto == "HTTP/2.0" || e.IsGRPC() { // where a call's status may be
			r.ResponseHeader, r.Error = e.ResponseHeader, e.Error
		}
		return r
	}
	answers := func(e *Exchange) *Exchange {
		return &Exchange{ID: e.ID, Duration: e.Duration, Method: e.Method, URL: e.URL, Status: e.Status,
			ResponseHeader: e.ResponseHeader, ResponseBody: e.ResponseBody, ResponseBodySize: e.ResponseBodySize, Error: e.Error,
			ResponseTrailer: e.ResponseTrailer, Messages: e.Messages}
	}
	for _, c := range []struct {
		name string
		read func(context.Context, []int64) ([]*Exchange, error)
		want func(*Exchange) *Exchange
	}{{"Requests", s.Requests, requests}, {"Answers", s.Answers, answers}} {
		for round := range 2 { // the second on prepared statements
			got, err := c.read(ctx, ids)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			var want []*Exchange
			for i := len(all) - 1; i >= 0; i-- {
				want = append(want, c.want(all[i]))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s round %d (-want +got):\n%s", c.name, round, diff)
			}
		}
	}
}

// TestRequestsManyConcurrent reads more IDs than one query names, from
// several goroutines at once, then after Close.
func TestRequestsManyConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "many.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = maxIDs + 900
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range n {
		w.AddExchange(&Exchange{ID: w.NewID(), Direction: Inbound, Protocol: "http", Service: "127.0.0.1:8080",
			Start: start.Add(time.Duration(i) * time.Millisecond), Method: "POST", URL: fmt.Sprintf("/items/%d", i),
			RequestHeader: http.Header{"Content-Type": {"text/plain"}}, RequestBody: []byte(fmt.Sprint("body ", i)), Status: 200})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []int64
	for e, err := range s.Index(ctx, Inbound) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if len(ids) != n {
		t.Fatalf("indexed %d, want %d", len(ids), n)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for k := range 3 {
				part := ids[(g+k)%2:]
				if g%2 == 1 {
					part = ids[: 512+g*7 : 512+g*7]
				}
				got, err := s.Requests(ctx, part)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) != len(part) {
					t.Errorf("read %d, want %d", len(got), len(part))
					return
				}
				for i, e := range got {
					if e.ID != part[i] || string(e.RequestBody) != fmt.Sprint("body ", e.ID-1) || e.URL != fmt.Sprintf("/items/%d", e.ID-1) {
						t.Errorf("position %d: exchange %d %q %q", i, e.ID, e.URL, e.RequestBody)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if idle := len(s.readers.idle); idle == 0 || idle > maxIdleReaders {
		t.Errorf("%d idle readers, want 1 to %d", idle, maxIdleReaders)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Requests(ctx, ids[:3]); err == nil {
		t.Error("Requests after Close: no error")
	}
}
