package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

func main() {
	args := os.Args[1:]
	cmd := "compare"
	if len(args) > 0 && (args[0] == "loop" || args[0] == "gen" || args[0] == "compare" || args[0] == "serve" ||
		args[0] == "bigsnap" || args[0] == "app" || args[0] == "rss" || args[0] == "grpc" || args[0] == "snap") {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "loop":
		err = loop(args)
	case "gen":
		err = gen(args)
	case "bigsnap":
		err = bigsnap(args)
	case "app":
		err = app()
	case "rss":
		err = rss(args)
	case "grpc":
		err = grpcBench(args)
	case "snap":
		if len(args) != 1 {
			err = fmt.Errorf("want FILE")
		} else {
			err = writeSnapshot(args[0])
		}
	case "serve":
		var served atomic.Int64
		var url string
		url, err = serve(&served)
		if err == nil {
			fmt.Println(url)
			select {}
		}
	default:
		err = compare(args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func loadArgs(args []string) (string, int, time.Duration, error) {
	if len(args) != 3 {
		return "", 0, 0, fmt.Errorf("want URL CONCURRENCY DURATION")
	}
	c, err := strconv.Atoi(args[1])
	if err != nil {
		return "", 0, 0, err
	}
	d, err := time.ParseDuration(args[2])
	return args[0], c, d, err
}

// loop is the simplest closed-loop net/http generator: a baseline of what Go's
// HTTP client costs per request.
func loop(args []string) error {
	url, c, d, err := loadArgs(args)
	if err != nil {
		return err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: c, MaxConnsPerHost: c, DisableCompression: true}
	client := &http.Client{Transport: tr}
	deadline := time.Now().Add(d)
	var n, fails atomic.Int64
	var wg sync.WaitGroup
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				resp, err := client.Get(url)
				if err != nil {
					fails.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Printf("requests %d failures %d\n", n.Load(), fails.Load())
	return nil
}

// discard counts results.
type discard struct{ n, failed atomic.Int64 }

func (d *discard) Add(r *snapshots.Result) {
	d.n.Add(1)
	if r.Failed() {
		d.failed.Add(1)
	}
}

// gen drives the replayer library directly with a discarding sink: the
// generator's own cost, without the run file.
func gen(args []string) error {
	var runFile, profile string
	for len(args) > 3 {
		switch {
		case strings.HasPrefix(args[len(args)-1], "-run="):
			runFile = strings.TrimPrefix(args[len(args)-1], "-run=")
		case strings.HasPrefix(args[len(args)-1], "-cpuprofile="):
			profile = strings.TrimPrefix(args[len(args)-1], "-cpuprofile=")
		default:
			return fmt.Errorf("unknown argument %q", args[len(args)-1])
		}
		args = args[:len(args)-1]
	}
	url, c, d, err := loadArgs(args)
	if err != nil {
		return err
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	r, err := replayer.New(replayer.Config{Target: url, Exchanges: benchExchanges(), MaxInFlight: max(c, 1)})
	if err != nil {
		return err
	}
	defer r.Close()
	var sink discard
	var out replayer.ResultSink = &sink
	var rw *snapshots.RunWriter
	if runFile != "" {
		if rw, err = snapshots.CreateRun(runFile, snapshots.RunInfo{Name: "bench"}); err != nil {
			return err
		}
		out = teeSink{rw, &sink}
	}
	if _, err := r.Run(context.Background(), replayer.LoadPlan{VUs: c, Duration: d}, out); err != nil {
		return err
	}
	if rw != nil {
		if err := rw.Close(snapshots.RunInfo{}); err != nil {
			return err
		}
	}
	fmt.Printf("requests %d failures %d\n", sink.n.Load(), sink.failed.Load())
	return nil
}

type teeSink []replayer.ResultSink

func (t teeSink) Add(r *snapshots.Result) {
	for _, s := range t {
		s.Add(r)
	}
}

// benchExchanges is the recorded request the generators send: one GET with
// the headers a typical client sends.
func benchExchanges() []*snapshots.Exchange {
	return []*snapshots.Exchange{{
		ID: 1, Direction: snapshots.Inbound, Protocol: "http", Service: "bench:80",
		Start: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), Duration: time.Millisecond,
		Method: "GET", URL: "http://bench/bench",
		RequestHeader: http.Header{"User-Agent": {"bench"}, "Accept": {"*/*"}},
		Status:        200, Endpoint: "GET /bench",
	}}
}
