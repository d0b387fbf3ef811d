package recorder

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/internal/redact"
	"github.com/replaykit/replay/snapshots"
)

// BenchmarkInbound compares, in one run against the same backend, the
// recording proxy (every body recorded into a real snapshot file), a tuned
// bare httputil.ReverseProxy (idle pool sized to the concurrency, BufferPool
// set) and a direct connection.
//
// Method. The backend (a small JSON answer) and the load generator run in a
// child process (this test binary, see TestBenchHelperProcess), so that this
// process holds nothing but the proxy under test: its CPU time (getrusage
// user+system) over a phase, divided by the requests of the phase, is the
// proxy's CPU per request, the snapshot writer's work included (each
// recorder phase writes a new snapshot and closes it inside the measured
// window). Phases, each benchPhase long:
//   - throughput: benchConcurrency closed-loop clients, requests per second;
//   - latency: an open-loop load at benchRate requests per second (or a
//     quarter of the bare proxy's throughput, when the machine has less
//     room) with capped connections, p50 measured from the actual send.
//
// Variants are interleaved over benchRounds rounds and each figure is the
// median of its rounds; the spread is logged. Ratios are reported against
// the bare proxy (throughput, CPU) and against the direct connection (p50).
func BenchmarkInbound(b *testing.B) {
	h := startBenchHelper(b)
	defer h.close()
	backend := mustParseURL(b, "http://"+h.backend)

	bare := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(backend) },
		Transport: &http.Transport{
			MaxIdleConnsPerHost: benchConcurrency * 2,
			DisableCompression:  true,
		},
		BufferPool: newBufferPool(),
	})
	defer bare.Close()

	// The recorder's sink is swapped per phase, so each phase writes and
	// closes its own snapshot inside its measured window.
	sink := &swapSink{}
	in, err := NewInbound(InboundConfig{Target: backend, Sink: sink, Inflight: NewInflight()})
	if err != nil {
		b.Fatal(err)
	}
	rec := httptest.NewServer(in)
	defer rec.Close()
	dir := b.TempDir()
	var files atomic.Int64
	recording := func(run func()) {
		path := filepath.Join(dir, fmt.Sprintf("bench-%d.snap", files.Add(1)))
		// Redacting, as a Session's writer does.
		w, err := snapshots.Create(path, snapshots.Options{Redactor: redact.New(redact.Config{})})
		if err != nil {
			b.Fatal(err)
		}
		sink.set(w)
		run()
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}

	type variant struct {
		name string
		url  string
		wrap func(func())
	}
	plain := func(run func()) { run() }
	variants := []variant{
		{"direct", "http://" + h.backend, plain},
		{"bare", bare.URL, plain},
		{"recorder", rec.URL, recording},
	}
	for _, v := range variants { // warm up connections and code paths
		v.wrap(func() { h.throughput(b, v.url, benchConcurrency, benchPhase/4) })
	}

	rps := map[string][]float64{}
	cpu := map[string][]float64{}
	p50 := map[string][]float64{}
	for range benchRounds {
		for _, v := range variants {
			var res loadResult
			c := cputime.Self()
			v.wrap(func() { res = h.throughput(b, v.url, benchConcurrency, benchPhase) })
			used := cputime.Self() - c
			rps[v.name] = append(rps[v.name], float64(res.requests)/res.elapsed.Seconds())
			cpu[v.name] = append(cpu[v.name], float64(used.Microseconds())/float64(res.requests))
		}
	}
	// A fixed rate is only moderate on a machine that has room for it: on a
	// busy one, latency at benchRate would measure queueing, not the proxy.
	rate := benchRate
	if room := int(median(rps["bare"]) / 4); room < rate {
		rate = room
		b.Logf("latency measured at %d req/s, a quarter of the bare proxy's throughput: this machine has no room for %d", rate, benchRate)
	}
	for range benchRounds {
		for _, v := range variants {
			var res loadResult
			v.wrap(func() { res = h.latency(b, v.url, rate, benchPhase) })
			p50[v.name] = append(p50[v.name], float64(res.p50.Microseconds())/1000)
		}
	}
	for _, v := range variants {
		b.Logf("%-8s req/s %v, proxy CPU µs/req %v, p50 ms at %d req/s %v", v.name, round(rps[v.name]), round(cpu[v.name]), rate, round(p50[v.name]))
	}
	b.ReportMetric(float64(rate), "p50-at-req/s")
	b.ReportMetric(median(rps["recorder"]), "rec-req/s")
	b.ReportMetric(median(rps["bare"]), "bare-req/s")
	b.ReportMetric(median(rps["direct"]), "direct-req/s")
	b.ReportMetric(median(rps["recorder"])/median(rps["bare"]), "rec/bare-throughput")
	b.ReportMetric(median(cpu["recorder"]), "rec-CPU-µs/req")
	b.ReportMetric(median(cpu["bare"]), "bare-CPU-µs/req")
	b.ReportMetric(median(cpu["recorder"])/median(cpu["bare"]), "rec/bare-CPU")
	b.ReportMetric(median(p50["direct"]), "direct-p50-ms")
	b.ReportMetric(median(p50["bare"]), "bare-p50-ms")
	b.ReportMetric(median(p50["recorder"]), "rec-p50-ms")
	b.ReportMetric(median(p50["recorder"])-median(p50["direct"]), "rec-direct-p50-ms")
}

const (
	benchConcurrency = 32
	benchRate        = 2000
	benchPhase       = 2 * time.Second
	benchRounds      = 5
)

// swapSink forwards to a sink that can be replaced between phases.
type swapSink struct {
	mu sync.RWMutex
	w  Sink
}

func (s *swapSink) set(w Sink) { s.mu.Lock(); s.w = w; s.mu.Unlock() }
func (s *swapSink) get() Sink  { s.mu.RLock(); defer s.mu.RUnlock(); return s.w }

func (s *swapSink) NewID() int64                      { return s.get().NewID() }
func (s *swapSink) AddExchange(e *snapshots.Exchange) { s.get().AddExchange(e) }
func (s *swapSink) CountSeen(d snapshots.Direction)   { s.get().CountSeen(d) }

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func round(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i], _ = strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	}
	return out
}

func mustParseURL(b *testing.B, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		b.Fatal(err)
	}
	return u
}

// benchHelper is the child process that runs the backend and the load.
type benchHelper struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	backend string
}

type loadResult struct {
	requests int64
	errors   int64
	elapsed  time.Duration
	p50      time.Duration
}

func startBenchHelper(b *testing.B) *benchHelper {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "REPLAY_BENCH_HELPER=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	h := &benchHelper{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	f := h.read(b)
	if len(f) != 2 || f[0] != "backend" {
		b.Fatalf("helper said %q", f)
	}
	h.backend = f[1]
	return h
}

func (h *benchHelper) close() {
	h.in.Close()
	h.cmd.Wait()
}

func (h *benchHelper) read(b *testing.B) []string {
	for h.out.Scan() {
		if f := strings.Fields(h.out.Text()); len(f) > 0 && (f[0] == "backend" || f[0] == "result") {
			return f
		}
	}
	b.Fatalf("helper ended: %v", h.out.Err())
	return nil
}

func (h *benchHelper) ask(b *testing.B, cmd string) loadResult {
	fmt.Fprintln(h.in, cmd)
	f := h.read(b)
	var r loadResult
	var elapsed, p50 int64
	if _, err := fmt.Sscan(strings.Join(f[1:], " "), &r.requests, &r.errors, &elapsed, &p50); err != nil {
		b.Fatalf("helper said %q: %v", f, err)
	}
	r.elapsed, r.p50 = time.Duration(elapsed), time.Duration(p50)
	if r.errors > 0 || r.requests == 0 {
		b.Fatalf("%s: %d requests, %d errors", cmd, r.requests, r.errors)
	}
	return r
}

func (h *benchHelper) throughput(b *testing.B, url string, conc int, d time.Duration) loadResult {
	return h.ask(b, fmt.Sprintf("throughput %s %d %d", url, conc, d))
}

func (h *benchHelper) latency(b *testing.B, url string, rate int, d time.Duration) loadResult {
	return h.ask(b, fmt.Sprintf("latency %s %d %d", url, rate, d))
}

// TestBenchHelperProcess is not a test: it is the child process of
// BenchmarkInbound, running the backend and the load generator.
func TestBenchHelperProcess(t *testing.T) {
	if os.Getenv("REPLAY_BENCH_HELPER") != "1" {
		t.Skip("the child process of BenchmarkInbound")
	}
	body := []byte(`{"id":123,"status":"shipped","items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"total":"42.50"}`)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	fmt.Printf("backend %s\n", l.Addr())
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var kind, target string
		var n int
		var d time.Duration
		if _, err := fmt.Sscan(sc.Text(), &kind, &target, &n, &d); err != nil {
			t.Fatalf("bad command %q: %v", sc.Text(), err)
		}
		var r loadResult
		switch kind {
		case "throughput":
			r = closedLoad(target+"/orders/123", n, d)
		case "latency":
			r = openLoad(target+"/orders/123", n, d)
		}
		fmt.Printf("result %d %d %d %d\n", r.requests, r.errors, int64(r.elapsed), int64(r.p50))
	}
	os.Exit(0)
}

func get(c *http.Client, url string) error {
	res, err := c.Get(url)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("status %d", res.StatusCode)
	}
	return err
}

// closedLoad runs conc clients back to back for d.
func closedLoad(url string, conc int, d time.Duration) loadResult {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc, DisableCompression: true}}
	defer c.CloseIdleConnections()
	var reqs, errs atomic.Int64
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := get(c, url); err != nil {
					errs.Add(1)
				} else {
					reqs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return loadResult{requests: reqs.Load(), errors: errs.Load(), elapsed: time.Since(start)}
}

// openLoad sends rate requests per second for d, whatever the answers, over
// at most 64 connections, and measures latency from the actual send.
func openLoad(url string, rate int, d time.Duration) loadResult {
	const workers = 64
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers, DisableCompression: true}}
	defer c.CloseIdleConnections()
	total := int(d.Seconds() * float64(rate))
	due := make(chan struct{}, total)
	lat := make([][]time.Duration, workers)
	var errs atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range due {
				t0 := time.Now()
				if err := get(c, url); err != nil {
					errs.Add(1)
					continue
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for i := range total {
		if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		due <- struct{}{}
	}
	close(due)
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := loadResult{requests: int64(len(all)), errors: errs.Load(), elapsed: time.Since(start)}
	if len(all) > 0 {
		r.p50 = all[len(all)/2]
	}
	return r
}
