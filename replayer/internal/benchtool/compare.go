package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/snapshots"
)

// generator is one load generator's command line, run against the target.
type generator struct {
	name  string
	model string // "closed" or "open"
	argv  []string
	stdin string
	// run, when set, is the replay run file to read latencies from.
	run string
	// vegeta, when set, is the vegeta binary whose results file
	// ("VEGETAOUT" in argv) gives latencies.
	vegeta string
}

// measurement is what one generator achieved, counted at the target.
type measurement struct {
	requests int64
	cpu      time.Duration
	wall     time.Duration
	err      error
	note     string
}

func compare(args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	conc := fs.Int("c", 50, "concurrency of the closed model (connections, workers, virtual users)")
	dur := fs.Duration("d", 10*time.Second, "duration of each generator's run")
	rate := fs.Int("rate", 2000, "open-model rate, requests per second (0 skips the open model)")
	rounds := fs.Int("rounds", 2, "rounds over all generators; the table shows the median")
	wrk := fs.String("wrk", "wrk", "wrk binary ('' skips)")
	hey := fs.String("hey", "hey", "hey binary ('' skips)")
	vegeta := fs.String("vegeta", "vegeta", "vegeta binary ('' skips)")
	replay := fs.String("replay", "", "replay binary (built from ./cmd/replay; '' skips replay run)")
	only := fs.String("only", "", "comma-separated generator names to run (default all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "replay-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var served atomic.Int64
	url, err := serve(&served)
	if err != nil {
		return err
	}
	base := strings.TrimSuffix(url, "/bench")

	self, err := os.Executable()
	if err != nil {
		return err
	}
	snap := filepath.Join(dir, "bench.snap")
	if *replay != "" {
		if err := writeSnapshot(snap); err != nil {
			return err
		}
	}
	c, d := strconv.Itoa(*conc), dur.String()
	secs := strconv.Itoa(int(dur.Seconds()))
	var gens []generator
	add := func(g generator, binary string) {
		if binary == "" {
			return
		}
		if *only != "" && !contains(strings.Split(*only, ","), g.name) {
			return
		}
		gens = append(gens, g)
	}
	add(generator{name: "wrk", model: "closed", argv: []string{*wrk, "-t2", "-c" + c, "-d" + secs + "s", url}}, *wrk)
	add(generator{name: "hey", model: "closed", argv: []string{*hey, "-c", c, "-z", d, "-disable-compression", url}}, *hey)
	add(generator{name: "vegeta", model: "closed", argv: []string{*vegeta, "attack", "-rate=0", "-workers=" + c, "-max-workers=" + c, "-duration=" + d, "-output=/dev/null"}, stdin: "GET " + url + "\n"}, *vegeta)
	add(generator{name: "net/http loop", model: "closed", argv: []string{self, "loop", url, c, d}}, self)
	add(generator{name: "replayer (library)", model: "closed", argv: []string{self, "gen", url, c, d}}, self)
	add(generator{name: "replay run", model: "closed", argv: []string{*replay, "run", "--snapshot", snap, "--target", base, "--vus", c, "--duration", d, "--format", "json", "--out", "RUNFILE"}}, *replay)
	if *rate > 0 {
		r := strconv.Itoa(*rate)
		add(generator{name: "vegeta", model: "open", argv: []string{*vegeta, "attack", "-rate=" + r + "/s", "-duration=" + d, "-output=VEGETAOUT"}, stdin: "GET " + url + "\n", vegeta: *vegeta}, *vegeta)
		add(generator{name: "replay run", model: "open", argv: []string{*replay, "run", "--snapshot", snap, "--target", base, "--rate", r + "/s", "--duration", d, "--format", "json", "--out", "RUNFILE"}}, *replay)
	}

	results := make([][]measurement, len(gens))
	notes := make([]string, len(gens))
	for round := range *rounds {
		for i, g := range gens {
			time.Sleep(time.Second) // let connections of the previous run close
			// Fill in this round's file names on a copy of the command line.
			g.argv = append([]string(nil), g.argv...)
			g.run = ""
			vout := filepath.Join(dir, fmt.Sprintf("vegeta-%d-%d.bin", i, round))
			for j, a := range g.argv {
				switch a {
				case "RUNFILE":
					g.run = filepath.Join(dir, fmt.Sprintf("run-%d-%d.db", i, round))
					g.argv[j] = g.run
				case "-output=VEGETAOUT":
					g.argv[j] = "-output=" + vout
				}
			}
			before := served.Load()
			m := runGenerator(g)
			m.requests = served.Load() - before
			if g.run != "" && m.err == nil {
				m.note = runLatency(g.run)
			}
			if g.vegeta != "" && m.err == nil {
				m.note = vegetaLatency(g.vegeta, vout)
			}
			results[i] = append(results[i], m)
			if m.note != "" {
				notes[i] = m.note
			}
			fmt.Fprintf(os.Stderr, "round %d: %-20s %-6s %8d requests  %6.2fs CPU  %v\n", round+1, g.name, g.model, m.requests, m.cpu.Seconds(), errText(m.err))
		}
	}

	fmt.Printf("\nTarget: a Go net/http server on loopback answering 13 bytes; %s per run, concurrency %d, open model at %d/s; %d rounds, median shown.\n", d, *conc, *rate, *rounds)
	fmt.Printf("CPU is the generator process's user+system time; requests are counted by the target.\n\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "generator\tmodel\treq/s\tCPU s\treq per CPU-s\tvs wrk\tCPU µs/req\t")
	var wrkEff float64
	type row struct {
		g       generator
		rps, cs float64
		eff     float64
		note    string
	}
	var rows []row
	for i, g := range gens {
		ms := results[i]
		rps := median(ms, func(m measurement) float64 { return float64(m.requests) / dur.Seconds() })
		cpu := median(ms, func(m measurement) float64 { return m.cpu.Seconds() })
		eff := median(ms, func(m measurement) float64 {
			if m.cpu <= 0 {
				return 0
			}
			return float64(m.requests) / m.cpu.Seconds()
		})
		if g.name == "wrk" {
			wrkEff = eff
		}
		note := notes[i]
		if g.model == "open" {
			note = strings.TrimSuffix(fmt.Sprintf("%.1f%% of %d/s; %s", 100*rps/float64(*rate), *rate, note), "; ")
		}
		rows = append(rows, row{g, rps, cpu, eff, note})
	}
	for _, r := range rows {
		ratio := "-"
		if wrkEff > 0 && r.g.model == "closed" {
			ratio = fmt.Sprintf("%.2f×", r.eff/wrkEff)
		}
		perReq := 0.0
		if r.eff > 0 {
			perReq = 1e6 / r.eff
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.2f\t%.0f\t%s\t%.1f\t\n", r.g.name, r.g.model, r.rps, r.cs, r.eff, ratio, perReq)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.note != "" {
			fmt.Printf("%s (%s): %s\n", r.g.name, r.g.model, r.note)
		}
	}
	return nil
}

// runGenerator runs g to completion and measures its CPU time.
func runGenerator(g generator) measurement {
	cmd := exec.Command(g.argv[0], g.argv[1:]...)
	if g.stdin != "" {
		cmd.Stdin = strings.NewReader(g.stdin)
	}
	devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer devnull.Close()
	cmd.Stdout = devnull
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	m := measurement{wall: time.Since(start)}
	if cmd.ProcessState != nil {
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			m.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
		}
	}
	if err != nil {
		// replay run exits 99 when goals fail; there are none here.
		m.err = fmt.Errorf("%w: %s", err, strings.TrimSpace(lastLine(stderr.String())))
	}
	return m
}

// runLatency summarizes a replay run file's latency from intended start and
// from the actual send.
func runLatency(path string) string {
	run, err := snapshots.OpenRun(path)
	if err != nil {
		return err.Error()
	}
	defer run.Close()
	s, err := analyzer.SummarizeRun(context.Background(), run, analyzer.SummarizeOptions{})
	if err != nil {
		return err.Error()
	}
	o := s.Overall
	return fmt.Sprintf("latency p50 %.2fms p99 %.2fms; service time p50 %.2fms p99 %.2fms; failed %d",
		o.Latency.P50, o.Latency.P99, o.ServiceTime.P50, o.ServiceTime.P99, o.Failed)
}

// vegetaLatency reads vegeta's results file with `vegeta report`.
func vegetaLatency(vegeta, path string) string {
	out, err := exec.Command(vegeta, "report", "-type=json", path).Output()
	if err != nil {
		return "vegeta report: " + err.Error()
	}
	var rep struct {
		Latencies struct {
			P50 float64 `json:"50th"`
			P99 float64 `json:"99th"`
		} `json:"latencies"`
		Success float64 `json:"success"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return "vegeta report: " + err.Error()
	}
	return fmt.Sprintf("latency (from its actual send) p50 %.2fms p99 %.2fms; success %.1f%%",
		rep.Latencies.P50/1e6, rep.Latencies.P99/1e6, 100*rep.Success)
}

func writeSnapshot(path string) error {
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		return err
	}
	for _, e := range benchExchanges() {
		e.ID = 0
		w.AddExchange(e)
	}
	return w.Close()
}

func median(ms []measurement, f func(measurement) float64) float64 {
	var v []float64
	for _, m := range ms {
		v = append(v, f(m))
	}
	if len(v) == 0 {
		return 0
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// serve starts the target: a Go net/http server on loopback answering 13
// bytes to any request, counting them.
func serve(served *atomic.Int64) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	body := []byte("hello, world\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	})}
	go srv.Serve(l)
	return "http://" + l.Addr().String() + "/bench", nil
}
