package main

import (
	"context"
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
	open     openFigures // open model only
}

// compareOptions are compare's flags.
type compareOptions struct {
	conc, rate, rounds                    int
	dur                                   time.Duration
	wrk, hey, vegeta, replay, only, model string
	// baseline is a second replay binary (a build of an earlier commit) run
	// beside replay (both models), for before/after figures from the
	// same session.
	baseline string
}

// parseCompare parses compare's flags.
func parseCompare(args []string) (compareOptions, error) {
	var o compareOptions
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.IntVar(&o.conc, "c", 50, "concurrency of the closed model (connections, workers, virtual users)")
	fs.DurationVar(&o.dur, "d", 10*time.Second, "duration of each generator's run")
	fs.IntVar(&o.rate, "rate", 2000, "open-model rate, requests per second (0 skips the open model)")
	fs.IntVar(&o.rounds, "rounds", 2, "rounds over all generators; the table shows the median")
	fs.StringVar(&o.wrk, "wrk", "wrk", "wrk binary ('' skips)")
	fs.StringVar(&o.hey, "hey", "hey", "hey binary ('' skips)")
	fs.StringVar(&o.vegeta, "vegeta", "vegeta", "vegeta binary ('' skips)")
	fs.StringVar(&o.replay, "replay", "", "replay binary (built from ./cmd/replay; '' skips replay run)")
	fs.StringVar(&o.only, "only", "", "comma-separated generator names to run (default all)")
	fs.StringVar(&o.baseline, "baseline", "", "a second replay binary (say, the previous commit's build) run beside -replay in both models ('' skips)")
	fs.StringVar(&o.model, "model", "", "run only the generators of this model: closed or open (default both)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.model != "" && o.model != "closed" && o.model != "open" {
		return o, fmt.Errorf("-model %q: want closed or open", o.model)
	}
	return o, nil
}

// compare runs every generator against one target for o.rounds rounds and
// prints the table of medians.
func compare(args []string) error {
	o, err := parseCompare(args)
	if err != nil {
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
	self, err := os.Executable()
	if err != nil {
		return err
	}
	snap := filepath.Join(dir, "bench.snap")
	if o.replay != "" || o.baseline != "" {
		if err := writeSnapshot(snap); err != nil {
			return err
		}
	}
	gens := generators(o, url, self, snap)
	results := make([][]measurement, len(gens))
	notes := make([]string, len(gens))
	for round := range o.rounds {
		for i, g := range gens {
			m := runRound(g, i, round, dir, &served)
			results[i] = append(results[i], m)
			if m.note != "" {
				notes[i] = m.note
			}
		}
	}
	if err := printTable(o, tableRows(o, gens, results, notes)); err != nil {
		return err
	}
	return printOpenTable(os.Stdout, o, gens, results)
}

// generators lists the command lines compare runs against url, leaving out
// those whose binary is empty or that -only does not name.
func generators(o compareOptions, url, self, snap string) []generator {
	base := strings.TrimSuffix(url, "/bench")
	c, d := strconv.Itoa(o.conc), o.dur.String()
	secs := strconv.Itoa(int(o.dur.Seconds()))
	var gens []generator
	add := func(g generator, binary string) {
		if binary == "" {
			return
		}
		if o.only != "" && !contains(strings.Split(o.only, ","), g.name) {
			return
		}
		if o.model != "" && g.model != o.model {
			return
		}
		gens = append(gens, g)
	}
	add(generator{name: "wrk", model: "closed", argv: []string{o.wrk, "-t2", "-c" + c, "-d" + secs + "s", url}}, o.wrk)
	add(generator{name: "hey", model: "closed", argv: []string{o.hey, "-c", c, "-z", d, "-disable-compression", url}}, o.hey)
	add(generator{name: "vegeta", model: "closed", argv: []string{o.vegeta, "attack", "-rate=0", "-workers=" + c, "-max-workers=" + c, "-duration=" + d, "-output=/dev/null"}, stdin: "GET " + url + "\n"}, o.vegeta)
	add(generator{name: "net/http loop", model: "closed", argv: []string{self, "loop", url, c, d}}, self)
	add(generator{name: "replayer (library)", model: "closed", argv: []string{self, "gen", url, c, d}}, self)
	for _, b := range []struct{ name, bin string }{{"replay baseline", o.baseline}, {"replay run", o.replay}} {
		add(generator{name: b.name, model: "closed", argv: []string{b.bin, "run", "--snapshot", snap, "--target", base, "--vus", c, "--duration", d, "--format", "json", "--out", "RUNFILE"}}, b.bin)
	}
	if o.rate > 0 {
		r := strconv.Itoa(o.rate)
		add(generator{name: "vegeta", model: "open", argv: []string{o.vegeta, "attack", "-rate=" + r + "/s", "-duration=" + d, "-output=VEGETAOUT"}, stdin: "GET " + url + "\n", vegeta: o.vegeta}, o.vegeta)
		for _, b := range []struct{ name, bin string }{{"replay baseline", o.baseline}, {"replay run", o.replay}} {
			add(generator{name: b.name, model: "open", argv: []string{b.bin, "run", "--snapshot", snap, "--target", base, "--rate", r + "/s", "--duration", d, "--format", "json", "--out", "RUNFILE"}}, b.bin)
		}
	}
	return gens
}

// runRound runs generator i once in the given round, counting the requests
// the target served meanwhile, and reports the run on stderr.
func runRound(g generator, i, round int, dir string, served *atomic.Int64) measurement {
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
	if m.err == nil {
		m.open, m.note = latencies(g, vout)
	}
	perReq := 0.0
	if m.requests > 0 {
		perReq = float64(m.cpu.Microseconds()) / float64(m.requests)
	}
	fmt.Fprintf(os.Stderr, "round %d: %-20s %-6s %8d requests  %6.2fs CPU  %6.1f µs/req  %v\n", round+1, g.name, g.model, m.requests, m.cpu.Seconds(), perReq, errText(m.err))
	if m.open.ok {
		fmt.Fprintf(os.Stderr, "         %s\n", m.open.line())
	}
	return m
}

// latencies reads the latencies of g's run: an open-model run's figures, or
// a closed-model replay run's summary as a note.
func latencies(g generator, vout string) (openFigures, string) {
	var f openFigures
	var err error
	switch {
	case g.model == "open" && g.run != "":
		f, err = replayOpenFigures(g.run)
	case g.model == "open" && g.vegeta != "":
		f, err = vegetaOpenFigures(g.vegeta, vout)
	case g.run != "":
		return f, runLatency(g.run)
	default:
		return f, ""
	}
	if err != nil {
		return f, err.Error()
	}
	return f, f.line()
}

// tableRow is one generator's medians over the rounds.
type tableRow struct {
	g       generator
	rps, cs float64
	eff     float64
	note    string
}

// tableRows takes each generator's medians; an open-model note gives the
// share of the asked rate achieved.
func tableRows(o compareOptions, gens []generator, results [][]measurement, notes []string) []tableRow {
	var rows []tableRow
	for i, g := range gens {
		ms := results[i]
		rps := median(ms, func(m measurement) float64 { return float64(m.requests) / o.dur.Seconds() })
		cpu := median(ms, func(m measurement) float64 { return m.cpu.Seconds() })
		eff := median(ms, func(m measurement) float64 {
			if m.cpu <= 0 {
				return 0
			}
			return float64(m.requests) / m.cpu.Seconds()
		})
		note := notes[i]
		if g.model == "open" {
			// The latencies of every round, and their medians, follow the
			// table (printOpenTable).
			note = fmt.Sprintf("%.1f%% of %d/s (latencies below)", 100*rps/float64(o.rate), o.rate)
		}
		rows = append(rows, tableRow{g, rps, cpu, eff, note})
	}
	return rows
}

// printTable prints the method, the table ("vs wrk" against wrk's row) and
// the notes.
func printTable(o compareOptions, rows []tableRow) error {
	fmt.Printf("\nTarget: a Go net/http server on loopback answering 13 bytes; %s per run, concurrency %d, open model at %d/s; %d rounds, median shown.\n", o.dur.String(), o.conc, o.rate, o.rounds)
	fmt.Printf("CPU is the generator process's user+system time; requests are counted by the target.\n\n")
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "generator\tmodel\treq/s\tCPU s\treq per CPU-s\tvs wrk\tCPU µs/req\t")
	var wrkEff float64
	for _, r := range rows {
		if r.g.name == "wrk" {
			wrkEff = r.eff
		}
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
