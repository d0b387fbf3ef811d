package recorder

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/replaykit/replay/internal/grpctest"
)

// Open-loop load of BenchmarkGRPCRecorderLatency.
const (
	grpcBenchRate   = 2000 // RPCs per second
	grpcBenchPhase  = 3 * time.Second
	grpcBenchRounds = 3
)

// BenchmarkGRPCRecorderLatency measures the latency the inbound recorder
// adds to gRPC calls: unary calls (grpc-go's interop server, a 64-byte
// request and answer) at 2,000 RPC/s, open loop on one multiplexed h2c
// connection, straight to the server and through a recording session that
// writes every call to a snapshot. Latency runs from the intended send to
// the answer (a stall of the client counts). Variants alternate over
// grpcBenchRounds rounds; each figure is the median of its rounds. Server,
// recorder and client share this process (and the machine's cores).
//
//	go test ./recorder -run XXX -bench GRPCRecorderLatency -benchtime 1x
func BenchmarkGRPCRecorderLatency(b *testing.B) {
	srv := grpctest.Start(b, nil)
	target, _ := url.Parse("http://" + srv.Addr)
	s, err := NewSession(SessionConfig{
		Snapshot: filepath.Join(b.TempDir(), "bench.snap"),
		Inbound:  []SessionInbound{{Listen: "127.0.0.1:0", Target: target}},
	})
	if err != nil {
		b.Fatal(err)
	}
	s.Start()
	defer s.Stop(10 * time.Second)
	addrs := map[string]string{"direct": srv.Addr, "recorder": s.InboundAddrs()[0].String()}
	p50, p99 := map[string][]float64{}, map[string][]float64{}
	for range b.N {
		for round := range grpcBenchRounds {
			for _, v := range []string{"direct", "recorder"} {
				lat, errs := grpcOpenLoop(b, addrs[v])
				if errs > 0 {
					b.Fatalf("%s: %d calls failed", v, errs)
				}
				p50[v] = append(p50[v], ms(lat[len(lat)/2]))
				p99[v] = append(p99[v], ms(lat[len(lat)*99/100]))
				b.Logf("round %d %-8s %d calls, p50 %.3f ms, p99 %.3f ms", round+1, v, len(lat), p50[v][round], p99[v][round])
			}
		}
	}
	b.ReportMetric(median(p50["direct"]), "direct-p50-ms")
	b.ReportMetric(median(p50["recorder"]), "rec-p50-ms")
	b.ReportMetric(median(p50["recorder"])-median(p50["direct"]), "added-p50-ms")
	b.ReportMetric(median(p99["direct"]), "direct-p99-ms")
	b.ReportMetric(median(p99["recorder"]), "rec-p99-ms")
	b.ReportMetric(median(p99["recorder"])-median(p99["direct"]), "added-p99-ms")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// grpcOpenLoop sends unary calls to addr at grpcBenchRate for
// grpcBenchPhase, each at its intended time, and returns their latencies
// (from the intended send), sorted, and the count of failed calls.
func grpcOpenLoop(b *testing.B, addr string) ([]time.Duration, int) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	tc := testgrpc.NewTestServiceClient(cc)
	req := &testpb.SimpleRequest{ResponseSize: 64, Payload: &testpb.Payload{Body: make([]byte, 64)}}
	ctx := context.Background()
	if _, err := tc.UnaryCall(ctx, req); err != nil { // connect first
		b.Fatal(err)
	}
	n := int(grpcBenchPhase.Seconds() * grpcBenchRate)
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	interval := time.Second / grpcBenchRate
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		intended := start.Add(time.Duration(i) * interval)
		if d := time.Until(intended); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			_, errs[i] = tc.UnaryCall(ctx, req)
			lat[i] = time.Since(intended)
		})
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if failed == 1 {
				b.Log(fmt.Sprint("first failure: ", err))
			}
		}
	}
	slices.Sort(lat)
	return lat, failed
}
