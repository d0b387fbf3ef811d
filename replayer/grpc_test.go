package replayer

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// recSink keeps what a recorder records, in memory.
type recSink struct {
	mu  sync.Mutex
	ids int64
	exs []*snapshots.Exchange
}

func (s *recSink) NewID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return s.ids
}

func (s *recSink) AddExchange(e *snapshots.Exchange) {
	s.mu.Lock()
	s.exs = append(s.exs, e)
	s.mu.Unlock()
}

func (s *recSink) CountSeen(snapshots.Direction) {}

func (s *recSink) all() []*snapshots.Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*snapshots.Exchange(nil), s.exs...)
}

// quiet waits until at least n exchanges are recorded and none came for a
// while, and returns them in the order they started.
func (s *recSink) quiet(t *testing.T, n int) []*snapshots.Exchange {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := -1
	for {
		time.Sleep(300 * time.Millisecond)
		all := s.all()
		if len(all) >= n && len(all) == last {
			sort.SliceStable(all, func(i, j int) bool { return all[i].Start.Before(all[j].Start) })
			return all
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s: %d exchanges recorded, want at least %d", len(all), n)
		}
		last = len(all)
	}
}

// recordInterop records grpc-go's interop client running every case that
// needs only the server, through replay's recorder in front of an interop
// server (h2c), and returns the recording and the calls the server saw.
func recordInterop(t *testing.T) ([]*snapshots.Exchange, []grpctest.Call) {
	t.Helper()
	srv := grpctest.Start(t, nil)
	sink := &recSink{}
	in, err := recorder.NewInbound(recorder.InboundConfig{Target: &url.URL{Scheme: "http", Host: srv.Addr}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: in, Protocols: recorder.InboundProtocols()}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close() })
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range grpctest.Cases {
		c.Run(ctx, cc)
	}
	calls := srv.Calls()
	return sink.quiet(t, len(calls)), calls
}

// callsByMethod counts calls per method.
func callsByMethod(calls []grpctest.Call) map[string]int {
	m := map[string]int{}
	for _, c := range calls {
		m[c.Method]++
	}
	return m
}

// checkGRPCReplay checks a replay of the recording exs against the server
// it went to: every result a gRPC one with the recorded status, and the
// server's calls per method the recording's (but for the calls to methods
// the server lacks, which no handler of it sees: rec are the calls the
// server saw when recorded).
func checkGRPCReplay(t *testing.T, res []*snapshots.Result, exs []*snapshots.Exchange, rec, got []grpctest.Call) {
	t.Helper()
	if len(res) != len(exs) {
		t.Errorf("%d results, want one per recorded call (%d)", len(res), len(exs))
	}
	for _, r := range res {
		if !r.GRPC || r.Failed() {
			t.Errorf("%s: grpc %v, status %s (recorded %s), error %q", r.Endpoint, r.GRPC,
				grpcwire.CodeName(r.GRPCStatus), grpcwire.CodeName(r.RecordedGRPCStatus), r.Error)
		}
	}
	seen := callsByMethod(rec)
	want, maybe := map[string]int{}, map[string]int{}
	for _, e := range exs {
		m, _ := snapshots.GRPCMethod(snapshots.EndpointOf(e, nil))
		if seen[m] == 0 {
			continue
		}
		want[m]++
		if code, _, ok := e.GRPCStatus(); code == 1 || !ok && e.Error != "" {
			// The client canceled at once (cancel_after_begin): the
			// cancel may overtake the call, on replay as when recorded.
			maybe[m]++
		}
	}
	traces := map[string]bool{}
	for _, r := range res {
		traces[r.TraceID] = true
	}
	for _, c := range got {
		// The traceparent travels as metadata, so a build's SQL comments
		// can carry it.
		if len(c.Traceparent) != 55 || !traces[c.Traceparent[3:35]] {
			t.Errorf("%s: traceparent metadata %q is none of the replay's", c.Method, c.Traceparent)
			break
		}
	}
	g := callsByMethod(got)
	for m, n := range want {
		if g[m] > n || g[m] < n-maybe[m] {
			t.Errorf("%s: the server saw %d calls on replay; %d recorded (%d canceled at once)", m, g[m], n, maybe[m])
		}
	}
	for m, n := range g {
		if want[m] == 0 {
			t.Errorf("%s: the server saw %d calls on replay, none recorded", m, n)
		}
	}
}

// TestReplayGRPCInterop records grpc-go's interop client through replay's
// recorder (unary, server streaming, client streaming and bidirectional
// calls, errors, deadlines, cancels, metadata), then replays the recording
// against a fresh interop server under every load model and in shards: the
// server sees each recorded call once, and every call ends with its
// recorded status.
func TestReplayGRPCInterop(t *testing.T) {
	exs, calls := recordInterop(t)
	for _, p := range []struct {
		name string
		plan LoadPlan
	}{
		{"closed", LoadPlan{VUs: 4, Iterations: 1}},
		{"open", LoadPlan{Rate: Rate{Count: 200, Per: time.Second}, Iterations: 1}},
		{"as recorded", LoadPlan{Speed: 1, Iterations: 1}},
	} {
		t.Run(p.name, func(t *testing.T) {
			srv := grpctest.Start(t, nil)
			r := newReplayer(t, Config{Target: "http://" + srv.Addr, Exchanges: exs, Conns: 2})
			var s sink
			if _, err := r.Run(context.Background(), p.plan, &s); err != nil {
				t.Fatal(err)
			}
			checkGRPCReplay(t, s.all(), exs, calls, waitCalls(srv, len(exs)))
		})
	}
	t.Run("stages", func(t *testing.T) {
		srv := grpctest.Start(t, nil)
		r := newReplayer(t, Config{Target: "http://" + srv.Addr, Exchanges: exs})
		var s sink
		plan := LoadPlan{Stages: []Stage{{Duration: 300 * time.Millisecond, Target: 4}, {Duration: 300 * time.Millisecond, Target: 1}}}
		if _, err := r.Run(context.Background(), plan, &s); err != nil {
			t.Fatal(err)
		}
		res := s.all()
		for _, r := range res {
			if !r.GRPC || r.Failed() {
				t.Errorf("%s: status %s (recorded %s), error %q", r.Endpoint, grpcwire.CodeName(r.GRPCStatus), grpcwire.CodeName(r.RecordedGRPCStatus), r.Error)
			}
		}
		if len(res) < len(exs) {
			t.Errorf("%d calls in 600 ms of stages, fewer than one pass (%d)", len(res), len(exs))
		}
	})
	t.Run("shards", func(t *testing.T) {
		srv := grpctest.Start(t, nil)
		var s sink
		var wg sync.WaitGroup
		t0 := time.Now().Add(100 * time.Millisecond)
		for k := range 3 {
			start := func(context.Context) (time.Time, error) { return t0, nil }
			r := newReplayer(t, Config{Target: "http://" + srv.Addr, Exchanges: exs, Shard: Shard{K: k, N: 3, Start: start}})
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := r.Run(context.Background(), LoadPlan{VUs: 3, Iterations: 1}, &s); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		checkGRPCReplay(t, s.all(), exs, calls, waitCalls(srv, len(exs)))
	})
}

// waitCalls returns the server's calls once it has n or a moment passed:
// a call ends in the server just after its client has its status.
func waitCalls(srv *grpctest.Server, n int) []grpctest.Call {
	for range 50 {
		if c := srv.Calls(); len(c) >= n {
			time.Sleep(50 * time.Millisecond)
			return srv.Calls()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv.Calls()
}
