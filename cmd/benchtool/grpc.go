package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/snapshots"
)

// grpcBench compares `replay run` of a recording of unary gRPC calls with
// ghz, the gRPC load tester, against one grpc-go server (the interop
// TestService, with reflection for ghz), in alternating rounds: RPCs
// counted at the server, per second and per generator CPU-second.
//
//	benchtool grpc -ghz PATH -replay PATH [-d 10s] [-c 50] [-conns 1] [-rounds 2]
func grpcBench(args []string) error {
	fs := flag.NewFlagSet("grpc", flag.ContinueOnError)
	dur := fs.Duration("d", 10*time.Second, "duration of each run")
	conc := fs.Int("c", 50, "concurrent calls (ghz -c, replay --vus)")
	conns := fs.Int("conns", 1, "HTTP/2 connections (ghz --connections, replay --conns)")
	rounds := fs.Int("rounds", 2, "rounds; each runs every generator once")
	ghz := fs.String("ghz", "", "the ghz binary")
	rp := fs.String("replay", "", "the replay binary")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ghz == "" || *rp == "" {
		return fmt.Errorf("grpc: want -ghz PATH and -replay PATH")
	}
	var served atomic.Int64
	addr, stop, err := serveGRPC(&served)
	if err != nil {
		return err
	}
	defer stop()
	dir, err := os.MkdirTemp("", "benchtool-grpc")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	snap := filepath.Join(dir, "unary.snap")
	if err := writeGRPCSnapshot(snap); err != nil {
		return err
	}
	d, c, n := dur.String(), strconv.Itoa(*conc), strconv.Itoa(*conns)
	gens := []generator{
		{name: "ghz", argv: []string{*ghz, "--insecure", "--call", "grpc.testing.TestService.UnaryCall",
			"-d", `{"response_size":64,"payload":{"body":"` + payloadB64 + `"}}`, "-c", c, "-z", d, "--connections", n, addr}},
		{name: "replay run", argv: []string{*rp, "run", "--snapshot", snap, "--target", "http://" + addr, "--vus", c,
			"--duration", d, "--conns", n, "--out", filepath.Join(dir, "r.run"), "--max-failed", "100%"}},
	}
	results := make([][]measurement, len(gens))
	for round := range *rounds {
		for i, g := range gens {
			os.Remove(filepath.Join(dir, "r.run"))
			before := served.Load()
			m := runGenerator(g)
			m.requests = served.Load() - before
			results[i] = append(results[i], m)
			fmt.Fprintf(os.Stderr, "round %d %-10s %d RPCs, %.2f CPU-s %s\n", round+1, g.name, m.requests, m.cpu.Seconds(), errText(m.err))
		}
	}
	return printGRPCTable(gens, results)
}

// printGRPCTable prints the medians of each generator, and its RPCs per
// CPU-second as a ratio of ghz's.
func printGRPCTable(gens []generator, results [][]measurement) error {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "generator\tRPC/s\tCPU-s/s\tRPCs per CPU-s\tvs ghz")
	var ref float64
	for i, g := range gens {
		rps := median(results[i], func(m measurement) float64 { return float64(m.requests) / m.wall.Seconds() })
		cpu := median(results[i], func(m measurement) float64 { return m.cpu.Seconds() / m.wall.Seconds() })
		per := median(results[i], func(m measurement) float64 { return float64(m.requests) / max(m.cpu.Seconds(), 1e-9) })
		if i == 0 {
			ref = per
		}
		fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.0f\t%.2f×\n", g.name, rps, cpu, per, per/ref)
	}
	return tw.Flush()
}

// payloadB64 is the 64-byte request payload, base64 as ghz's JSON takes it.
const payloadB64 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="

// serveGRPC serves grpc-go's interop TestService with reflection on
// loopback, counting the RPCs it serves.
func serveGRPC(served *atomic.Int64) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		served.Add(1)
		return h(ctx, req)
	}
	srv := grpc.NewServer(grpc.UnaryInterceptor(count))
	testgrpc.RegisterTestServiceServer(srv, interop.NewTestServer())
	reflection.Register(srv)
	go srv.Serve(l)
	return l.Addr().String(), srv.Stop, nil
}

// writeGRPCSnapshot writes a snapshot of 100 recorded unary calls, the
// request ghz sends: what `replay run` replays.
func writeGRPCSnapshot(path string) error {
	req, err := proto.Marshal(&testpb.SimpleRequest{ResponseSize: 64, Payload: &testpb.Payload{Body: make([]byte, 64)}})
	if err != nil {
		return err
	}
	resp, err := proto.Marshal(&testpb.SimpleResponse{Payload: &testpb.Payload{Body: make([]byte, 64)}})
	if err != nil {
		return err
	}
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		return err
	}
	t0 := time.Now()
	for i := range 100 {
		w.AddExchange(&snapshots.Exchange{
			Direction: snapshots.Inbound, Protocol: "http", Proto: "HTTP/2.0", Service: "svc:50051",
			Start: t0.Add(time.Duration(i) * time.Millisecond), Duration: time.Millisecond,
			Method: http.MethodPost, URL: "http://svc:50051/grpc.testing.TestService/UnaryCall",
			RequestHeader:   http.Header{"Content-Type": {"application/grpc"}, "Te": {"trailers"}},
			Status:          200,
			ResponseHeader:  http.Header{"Content-Type": {"application/grpc"}},
			ResponseTrailer: grpcwire.Status{}.Trailer(),
			Messages: []snapshots.Message{
				{From: snapshots.FromClient, Data: req, Size: int64(len(req))},
				{From: snapshots.FromServer, Data: resp, Size: int64(len(resp))},
			},
		})
	}
	return w.Close()
}
