package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

// exchange returns a varied exchange: nil and empty headers and bodies,
// zero and set times, multi-valued headers, bytes that are not UTF-8.
func exchange(r *rand.Rand, id int64) *snapshots.Exchange {
	e := &snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Method: "GET", URL: fmt.Sprintf("/items/%d?x=%d", id, r.IntN(9)),
		Duration: time.Duration(r.Int64N(1e9)), Status: 200 + r.IntN(300), Endpoint: "GET /items/{id}"}
	if r.IntN(2) == 0 {
		e.Direction, e.Protocol, e.Service, e.ParentID = snapshots.Outbound, "https", "stock.test:443", id-1
		e.URL = "https://stock.test" + e.URL
	}
	if r.IntN(3) > 0 {
		e.Start = time.Unix(0, 1_700_000_000_000_000_000+r.Int64N(1e15)).UTC()
	}
	switch r.IntN(3) {
	case 1:
		e.RequestHeader = http.Header{}
	case 2:
		e.RequestHeader = http.Header{"Accept": {"application/json"}, "X-Many": {"a", "", "c"}}
	}
	if r.IntN(2) == 0 {
		e.ResponseHeader = http.Header{"Content-Type": {"application/json"}}
	}
	switch r.IntN(3) {
	case 1:
		e.RequestBody = []byte{}
	case 2:
		e.RequestBody = []byte("{\"a\":1}\x00\xff")
		e.RequestBodySize = int64(len(e.RequestBody)) + r.Int64N(2)
	}
	if r.IntN(4) > 0 {
		e.ResponseBody = make([]byte, r.IntN(2000))
		for i := range e.ResponseBody {
			e.ResponseBody[i] = byte(r.IntN(256))
		}
		e.ResponseBodySize = int64(len(e.ResponseBody))
	}
	if r.IntN(5) == 0 {
		e.Error, e.Status = "upstream: connection reset", 0
	}
	if r.IntN(2) == 0 {
		e.TraceID, e.Proto = "4bf92f3577b34da6a3ce929d0e0e4736", "HTTP/2.0"
	}
	if r.IntN(3) == 0 { // a gRPC call: trailers and messages both ways
		e.ResponseTrailer = http.Header{"Grpc-Status": {fmt.Sprint(r.IntN(17))}}
		e.Messages = []snapshots.Message{
			{From: snapshots.FromClient, Offset: time.Duration(r.IntN(1e6)), Data: []byte{0x0a, 0x01, byte(r.IntN(256))}, Size: 3},
			{From: snapshots.FromServer, Offset: time.Duration(r.IntN(1e6)), Size: int64(r.IntN(5)), Compressed: r.IntN(2) == 0},
		}
	}
	return e
}

// batches returns n batches of size exchanges each (the last shorter)
// and a load function over them that counts its calls.
func batches(n, size int) ([][]*snapshots.Exchange, func(int) ([]*snapshots.Exchange, error), *sync.Map) {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]*snapshots.Exchange, n)
	id := int64(1)
	for b := range out {
		k := size
		if b == n-1 {
			k = size / 2
		}
		for range k {
			out[b] = append(out[b], exchange(r, id))
			id++
		}
	}
	var calls sync.Map
	return out, func(b int) ([]*snapshots.Exchange, error) {
		v, _ := calls.LoadOrStore(b, new(atomic.Int32))
		v.(*atomic.Int32).Add(1)
		return out[b], nil
	}, &calls
}

// bodies compares bodies as bytes (cmp's element by element is slow).
var bodies = cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) })

// TestRoundTrip: every batch reads back equal to what was loaded, field
// by field, each loaded once, in any order and from many goroutines.
func TestRoundTrip(t *testing.T) {
	want, load, calls := batches(37, 64)
	s, err := Build(context.Background(), t.TempDir(), len(want), load)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Len() != len(want) || s.Size() == 0 {
		t.Fatalf("Len %d, Size %d", s.Len(), s.Size())
	}
	for b := range want {
		if v, ok := calls.Load(b); !ok || v.(*atomic.Int32).Load() != 1 {
			t.Errorf("batch %d loaded %v times, want 1", b, v)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range want {
				b := (i*7 + g) % len(want)
				got, err := s.Batch(b)
				if err != nil {
					t.Errorf("batch %d: %v", b, err)
					return
				}
				if d := cmp.Diff(want[b], got, bodies); d != "" {
					t.Errorf("batch %d (-loaded +read):\n%s", b, d)
					return
				}
			}
		})
	}
	wg.Wait()
	// nil and empty stay apart, where bodies above does not tell them apart.
	got, _ := s.Batch(0)
	for i, e := range want[0] {
		if (e.RequestBody == nil) != (got[i].RequestBody == nil) || (e.RequestHeader == nil) != (got[i].RequestHeader == nil) {
			t.Errorf("exchange %d: nil and empty mixed up", e.ID)
		}
	}
	if _, err := s.Batch(len(want)); err == nil {
		t.Errorf("Batch past the end: no error")
	}
}

// TestNothingLeftBehind: the spool's file is gone from its directory as
// soon as it is made, and a failed build leaves nothing either.
func TestNothingLeftBehind(t *testing.T) {
	dir := t.TempDir()
	want, load, _ := batches(5, 10)
	s, err := Build(context.Background(), dir, len(want), load)
	if err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files in the spool's directory while it is open", len(ents))
	}
	s.Close()
	boom := errors.New("disk read failed")
	_, err = Build(context.Background(), dir, 50, func(b int) ([]*snapshots.Exchange, error) {
		if b == 17 {
			return nil, boom
		}
		return want[0], nil
	})
	if !errors.Is(err, boom) {
		t.Errorf("a batch that cannot be read: %v, want %v", err, boom)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, err = Build(ctx, dir, 1000, func(b int) ([]*snapshots.Exchange, error) {
		if b == 3 {
			cancel()
		}
		return want[0], nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled build: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d files left behind", len(ents))
	}
}

// TestNoRoom: a spool that would leave less than Reserve free is refused
// after its first batch.
func TestNoRoom(t *testing.T) {
	want, load, calls := batches(3, 200)
	_, err := Build(context.Background(), t.TempDir(), 1<<40, func(b int) ([]*snapshots.Exchange, error) {
		return load(b % len(want))
	})
	if !errors.Is(err, ErrNoSpool) {
		t.Fatalf("a spool of 2^40 batches of 100 kB: %v, want ErrNoSpool", err)
	}
	n := 0
	calls.Range(func(_, v any) bool { n += int(v.(*atomic.Int32).Load()); return true })
	if n > 8 {
		t.Errorf("%d batches read before the refusal", n)
	}
}

// TestNothingShared: a decoded batch shares no memory with the buffer it
// was read from (which is reused, and which a kept string would pin).
func TestNothingShared(t *testing.T) {
	want, _, _ := batches(1, 50)
	enc := encodeBatch(want[0])
	if len(enc) > encodedSize(want[0]) {
		t.Errorf("encoded %d bytes, more than the %d allocated", len(enc), encodedSize(want[0]))
	}
	got, err := decodeBatch(enc, &interner{})
	if err != nil {
		t.Fatal(err)
	}
	clear(enc)
	if d := cmp.Diff(want[0], got, bodies); d != "" {
		t.Errorf("after the buffer was cleared (-loaded +decoded):\n%s", d)
	}
}

// TestCorrupt: a damaged batch is an error, never a panic or a wrong
// exchange.
func TestCorrupt(t *testing.T) {
	want, _, _ := batches(1, 20)
	enc := encodeBatch(want[0])
	for _, bad := range [][]byte{nil, {0xff}, enc[:len(enc)-1], enc[:len(enc)/2], append(enc[:len(enc):len(enc)], 0)} {
		if _, err := decodeBatch(bad, &interner{}); err == nil {
			t.Errorf("%d bytes of a %d-byte batch decoded", len(bad), len(enc))
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	want, _, _ := batches(1, 3)
	f.Add(encodeBatch(want[0]))
	f.Add([]byte{1, 2, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		exs, err := decodeBatch(b, &interner{})
		if err != nil {
			return
		}
		if again, err := decodeBatch(encodeBatch(exs), &interner{}); err != nil || !cmp.Equal(exs, again, bodies) {
			t.Fatalf("decoded batch does not survive a round trip: %v", err)
		}
	})
}

func BenchmarkBatch(b *testing.B) {
	want, load, _ := batches(8, 512)
	s, err := Build(context.Background(), b.TempDir(), len(want), load)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.Batch(i % (len(want) - 1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512)/1000, "µs/exchange")
}
