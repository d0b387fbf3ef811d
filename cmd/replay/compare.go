package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
)

// compareSide is one build of a comparison, as the user names it.
type compareSide struct {
	// name is "baseline" or "candidate".
	name string
	// url is the build's base URL (a build the user runs); cmd the command
	// replay starts instead. Exactly one is set.
	url, cmd string
	// env holds KEY=VALUE entries for cmd, on top of compareOptions.env.
	env []string
	// headers are 'K: V' added to this side's requests, on top of
	// compareOptions.headers.
	headers []string
}

// compareOptions are the settings of `replay compare`. Build them with
// newCompareOptions (the flags' defaults), then set what differs; `replay
// demo` does so and calls compareRun.
type compareOptions struct {
	// snapshot is the snapshot to replay (a live comparison).
	snapshot string
	// runs are two run files to compare offline, instead of a live
	// comparison.
	runs []string

	baseline, candidate compareSide
	// env and headers apply to both sides.
	env, headers []string

	vus          int
	rate         string
	duration     time.Duration
	warmup       time.Duration
	slices       int
	sequential   bool
	explain      int // negative: 3 when SQL is counted, else 0
	reset        string
	endpoints    []string
	mocks        []string
	mockTiming   string
	onMiss       string
	caDir        string
	postgres     string
	sqlTraced    bool
	timeout      time.Duration
	maxInFlight  int
	startTimeout time.Duration

	goals   []string
	out     string
	formats []string

	// changed reports whether a flag was given on the command line; nil
	// (programmatic use) means none was.
	changed func(name string) bool
	// progress draws a live progress line on stderr (a terminal).
	progress bool
	// onTargets, when set, is told both sides' URLs once they answer (tests).
	onTargets func(baseline, candidate string)
}

// Defaults of `replay compare`.
const (
	compareDefaultVUs      = 4
	compareDefaultDuration = 20 * time.Second
	compareDefaultWarmup   = time.Second
	compareDefaultExplain  = 3
	compareDefaultStart    = 60 * time.Second
)

// newCompareOptions returns the options with the flags' defaults.
func newCompareOptions() *compareOptions {
	return &compareOptions{
		baseline:     compareSide{name: "baseline"},
		candidate:    compareSide{name: "candidate"},
		vus:          compareDefaultVUs,
		duration:     compareDefaultDuration,
		warmup:       compareDefaultWarmup,
		explain:      -1,
		mockTiming:   mock.TimingNone,
		onMiss:       mock.OnMissError,
		timeout:      replayer.DefaultTimeout,
		maxInFlight:  replayer.DefaultMaxInFlight,
		startTimeout: compareDefaultStart,
		formats:      []string{"text"},
	}
}

func newCmdCompare(s streams) *cobra.Command {
	opts := newCompareOptions()
	cmd := &cobra.Command{
		Use: "compare --snapshot SNAP (--baseline-url URL | --baseline-cmd CMD) (--candidate-url URL | --candidate-cmd CMD) [flags]\n" +
			"  replay compare RUN_A RUN_B [--format F]... [--goal G]... [--out DIR]",
		Short: "Replay a snapshot against a baseline and a candidate build and explain what got slower",
		Long:  compareLong,
		Example: `  replay compare --snapshot orders.snap \
      --baseline-cmd './orders' --baseline-env APP_SLOW=0 \
      --candidate-cmd './orders' --candidate-env APP_SLOW=1 \
      --env DATABASE_URL=postgres://postgres@127.0.0.1:5432/orders \
      --postgres 127.0.0.1:5432 --mock catalog.example.com:443 \
      --reset 'psql "$DATABASE_URL" -f reset.sql' --format text --format json
  replay compare --snapshot orders.snap --baseline-url https://sandbox.example --candidate-url https://sandbox.example \
      --baseline-header 'baggage: sd-routing-key=main' --candidate-header 'baggage: sd-routing-key=pr-42'
  replay compare out/baseline.run out/candidate.run --format markdown`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 && len(args) != 2 {
				return usagef("compare: give --snapshot SNAP for a live comparison, or two run files RUN_A RUN_B (got %d arguments)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.runs = args
			opts.changed = cmd.Flags().Changed
			opts.progress = isTerminalWriter(s.err)
			rep, err := compareRun(cmd.Context(), opts, s)
			if err != nil {
				return err
			}
			if !rep.Passed() {
				return errFailed
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.snapshot, "snapshot", "", "snapshot `FILE` to replay")
	f.StringVar(&opts.baseline.url, "baseline-url", "", "base `URL` of the baseline build (you start it)")
	f.StringVar(&opts.baseline.cmd, "baseline-cmd", "", "`COMMAND` that starts the baseline build (sh -c; must listen on $PORT)")
	f.StringVar(&opts.candidate.url, "candidate-url", "", "base `URL` of the candidate build (you start it)")
	f.StringVar(&opts.candidate.cmd, "candidate-cmd", "", "`COMMAND` that starts the candidate build (sh -c; must listen on $PORT)")
	f.StringArrayVar(&opts.baseline.env, "baseline-env", nil, "`KEY=VALUE` for --baseline-cmd (repeatable)")
	f.StringArrayVar(&opts.candidate.env, "candidate-env", nil, "`KEY=VALUE` for --candidate-cmd (repeatable)")
	f.StringArrayVar(&opts.env, "env", nil, "`KEY=VALUE` for both build commands (repeatable; --baseline-env/--candidate-env win)")
	f.StringArrayVar(&opts.baseline.headers, "baseline-header", nil, "add or replace header `'K: V'` on the baseline's requests (repeatable)")
	f.StringArrayVar(&opts.candidate.headers, "candidate-header", nil, "add or replace header `'K: V'` on the candidate's requests (repeatable)")
	f.StringArrayVar(&opts.headers, "header", nil, "add or replace header `'K: V'` on both sides' requests (repeatable)")
	f.IntVar(&opts.vus, "vus", opts.vus, "closed model: `N` virtual users")
	f.StringVar(&opts.rate, "rate", "", "open model instead: `R` requests per unit (200/s, 1000/m)")
	f.DurationVar(&opts.duration, "duration", opts.duration, "load time `D` per side")
	f.DurationVar(&opts.warmup, "warmup", opts.warmup, "load each side for `D` before measuring (results discarded; 0: none)")
	f.IntVar(&opts.slices, "slices", 0, "interleave each side's load in `N` slices (default: one per second of --duration, 10 to 20)")
	f.BoolVar(&opts.sequential, "sequential", false, "load the baseline, then the candidate, instead of interleaving")
	f.Var(autoInt{&opts.explain}, "explain", "replay `N` requests of every endpoint one at a time on each side first, for exact SQL counts (default 3 with --postgres, else 0)")
	f.StringVar(&opts.reset, "reset", "", "`COMMAND` (sh -c) that restores the data, run before each side's explain phase and before the load")
	f.StringArrayVar(&opts.endpoints, "endpoint", nil, "replay only `ENDPOINT` ('GET /orders/{id}', a glob 'GET /orders*', or a path glob '/orders/*'; repeatable)")
	f.StringArrayVar(&opts.mocks, "mock", nil, "mock upstream `HOST:PORT` from the snapshot on each side (repeatable; 'all' mocks every recorded upstream)")
	f.StringVar(&opts.mockTiming, "mock-timing", opts.mockTiming, "`WHEN` mocks answer: none (at once) or recorded (after the recorded duration)")
	f.StringVar(&opts.onMiss, "on-miss", opts.onMiss, "`WHAT` happens to a request a mock cannot answer: error (it fails) or passthrough (the real upstream answers)")
	f.StringVar(&opts.caDir, "ca-dir", "", "`DIR` of replay's CA for mocking HTTPS (default $XDG_CONFIG_HOME/replay/ca or ~/.config/replay/ca)")
	f.StringVar(&opts.postgres, "postgres", "", "count SQL per request: `[LISTEN=]HOST:PORT` puts a SQL counter per side in front of PostgreSQL at HOST:PORT")
	f.BoolVar(&opts.sqlTraced, "sql-traced", false, "the builds put each request's traceparent in their SQL comments (sqlcommenter): count SQL under load too")
	f.DurationVar(&opts.timeout, "timeout", opts.timeout, "per-request timeout `D`")
	f.IntVar(&opts.maxInFlight, "max-inflight", opts.maxInFlight, "at most `N` requests in flight per side (and connections); raised to --vus")
	f.DurationVar(&opts.startTimeout, "start-timeout", opts.startTimeout, "wait at most `D` for each build to answer")
	f.StringArrayVar(&opts.goals, "goal", nil, "goal `G` the candidate must meet, e.g. 'p95<500ms', 'GET /orders: sql<=5' (repeatable)")
	f.StringVar(&opts.out, "out", "", "`DIR` for the run files, build logs and reports (default ./replay-compare-TIMESTAMP; offline: no files)")
	f.StringArrayVar(&opts.formats, "format", opts.formats, "output `FORMAT`: text, json, markdown, junit or html (repeatable or comma-separated; the first goes to stdout, each to DIR/report.EXT)")
	return cmd
}

// autoInt is an int flag whose negative value means "chosen from the other
// flags"; its help shows no default.
type autoInt struct{ v *int }

func (a autoInt) String() string {
	if a.v == nil || *a.v < 0 {
		return ""
	}
	return strconv.Itoa(*a.v)
}

func (a autoInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of 0 or more, got %q", s)
	}
	*a.v = n
	return nil
}

func (a autoInt) Type() string { return "int" }

const compareLong = `compare replays the same recorded requests against a baseline and a candidate
build, with the same mocks and the same real database, and compares them
endpoint by endpoint: requests, failures, avg/p50/p95/p99 latency, SQL
statements per request and per fingerprint. It prints a verdict per endpoint
(regression, improvement, unchanged, inconclusive) and explains each
regression in one sentence: an N+1, more or slower statements (naming them),
failures, mock misses, or latency not from the database.

Builds. Each side is a URL (--baseline-url, --candidate-url: you run the
build) or a command that replay starts and stops (--baseline-cmd,
--candidate-cmd, run with /bin/sh -c in its own process group). Each side
gets its OWN mock (own recorded-answer order and miss count) and its OWN SQL
counter (same database), so statements and misses are told apart per side.
A started build gets, after replay's proxies listen:
  PORT                               a free port it must listen on
  HTTP_PROXY, HTTPS_PROXY (and lower case), NO_PROXY=localhost,127.0.0.1,::1
                                     its mock (with --mock)
  SSL_CERT_FILE, REQUESTS_CA_BUNDLE  system roots + replay's CA; NODE_EXTRA_CA_CERTS: the CA
  every variable whose value contains the --postgres HOST:PORT (DATABASE_URL,
  --env values) with that text replaced by its SQL counter's address;
  PGHOST/PGPORT when they name it; REPLAY_SQLCOUNT_ADDR
plus --env and its side's --baseline-env/--candidate-env. replay waits until
it answers HTTP (--start-timeout), keeps its output in DIR/baseline.log or
DIR/candidate.log, and stops it at the end (SIGTERM, then SIGKILL after 5s).
A build that exits or does not answer is an error naming the side, the
command and the last line of its output. With a URL side, replay prints the
settings that build must use (its mock and SQL counter) and waits until the
URL accepts connections. One URL with two header sets (--baseline-header,
--candidate-header, e.g. 'baggage: sd-routing-key=…') compares two builds
behind one address.

--postgres takes HOST:PORT (both counters on free loopback ports) or
LISTEN=HOST:PORT: LISTEN is "A,B" (one address per side), or one address whose
port P is the baseline's and P+1 the candidate's (port 0: both free).

Order of a comparison (default: interleaved):
  1. both sides' mocks and SQL counters listen; the builds start (or are
     waited for); replay's requests carry a fresh traceparent each;
  2. explain phase, baseline then candidate, each after --reset: up to
     --explain requests of every endpoint, one at a time, so every SQL
     statement is attributed exactly (requests are not counted in latency;
     --explain 0 skips this phase and its resets);
  3. warmup, baseline then candidate (--warmup, results discarded);
  4. --reset once more, then the load: each side's --duration is cut into
     --slices slices sent in alternating order (A B, B A, A B, …) under the
     same load model (--vus closed model, or --rate open model), so that the
     machine's drift hits both sides alike; the analyzer pairs slice i of
     each side. Both sides replay the same request sequence from its start.
With --sequential the baseline gets reset, explain, warmup, reset, load, then
the candidate the same; separate runs differ more, so the analyzer then asks
for a larger change (50%) before it calls one.

--reset COMMAND runs with /bin/sh -c and replay's environment plus
REPLAY_SIDE (baseline, candidate, or both before an interleaved load) and
REPLAY_PHASE (explain or load); its output goes to DIR/reset.log. It runs
after the builds started (they may create the schema), so it should restore
rows (TRUNCATE and re-insert), not drop tables. A failing reset stops the
comparison (exit 1) with the last line of its output.

Output. DIR (--out; default ./replay-compare-YYYYMMDD-HHMMSS, created) gets
baseline.run and candidate.run (run files: every request, with settings, mock
misses and statement totals), the build logs, reset.log, and report.EXT for
every --format (report.txt, .json, .md, .xml, .html). The first --format goes
to stdout; progress (on a terminal only) and notices go to stderr, so JSON on
stdout stays clean. Goals (--goal) are checked against the candidate.

Offline: replay compare RUN_A RUN_B compares two existing run files (the
baseline first) with --goal and --format; with --out DIR the reports are
written there too. replay report DIR renders a comparison again.

Exit codes: 0 no regression and every goal met, 99 a regression or a missed
goal, 1 could not run (a build that fails to start, a failing --reset), 2 bad
usage.`

// compareSetup is the validated form of compareOptions.
type compareSetup struct {
	plan     replayer.ComparePlan
	headers  [2]http.Header
	pgListen [2]string
	pgServer string
	formats  []report.Format
	goals    []analyzer.Goal
	settings map[string]string // shared by both sides' run files
}

func (opts *compareOptions) changedFlag(name string) bool {
	return opts.changed != nil && opts.changed(name)
}

// sides returns the two sides, baseline first.
func (opts *compareOptions) sides() [2]*compareSide {
	return [2]*compareSide{&opts.baseline, &opts.candidate}
}

// parseFormats reads --format values (repeatable, comma-separated), in
// order, without duplicates.
func parseFormats(values []string) ([]report.Format, error) {
	var out []report.Format
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			f, err := report.ParseFormat(name)
			if err != nil {
				return nil, usagef("--format %q: want text, json, markdown, junit or html", name)
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	if len(out) == 0 {
		out = []report.Format{report.Text}
	}
	return out, nil
}

// setupOffline validates the options of `replay compare RUN_A RUN_B`.
func (opts *compareOptions) setupOffline() (*compareSetup, error) {
	if opts.snapshot != "" {
		return nil, usagef("compare: give --snapshot SNAP for a live comparison or two run files, not both")
	}
	for _, name := range []string{"baseline-url", "baseline-cmd", "candidate-url", "candidate-cmd", "baseline-env", "candidate-env", "env",
		"baseline-header", "candidate-header", "header", "vus", "rate", "duration", "warmup", "slices", "sequential", "explain", "reset",
		"endpoint", "mock", "mock-timing", "on-miss", "ca-dir", "postgres", "sql-traced", "timeout", "max-inflight", "start-timeout"} {
		if opts.changedFlag(name) {
			return nil, usagef("compare RUN_A RUN_B: --%s applies to a live comparison (--snapshot SNAP)", name)
		}
	}
	su := &compareSetup{}
	var err error
	if su.formats, err = parseFormats(opts.formats); err != nil {
		return nil, err
	}
	if len(su.formats) > 1 && opts.out == "" {
		return nil, usagef("compare RUN_A RUN_B: several formats need --out DIR to write them to (the first goes to stdout)")
	}
	if su.goals, err = analyzer.ParseGoals(opts.goals); err != nil {
		return nil, usagef("compare: --goal: %v", err)
	}
	return su, nil
}

// setup validates the options of a live comparison; its errors are usage
// errors.
func (opts *compareOptions) setup() (*compareSetup, error) {
	su := &compareSetup{}
	if opts.snapshot == "" {
		return nil, usagef("compare: --snapshot SNAP is required (or give two run files to compare)")
	}
	for _, side := range opts.sides() {
		switch {
		case side.url == "" && side.cmd == "":
			return nil, usagef("compare: give the %s build: --%s-url URL or --%s-cmd COMMAND", side.name, side.name, side.name)
		case side.url != "" && side.cmd != "":
			return nil, usagef("compare: --%s-url and --%s-cmd both name the %s build; give one", side.name, side.name, side.name)
		case len(side.env) > 0 && side.cmd == "":
			return nil, usagef("compare: --%s-env applies to --%s-cmd, which is not given", side.name, side.name)
		}
		if side.url != "" {
			u, err := url.Parse(side.url)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, usagef("compare: --%s-url %q: want an http:// or https:// URL, e.g. http://127.0.0.1:8080", side.name, side.url)
			}
		}
		for _, kv := range side.env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return nil, usagef("compare: --%s-env %q: want KEY=VALUE", side.name, kv)
			}
		}
	}
	if len(opts.env) > 0 && opts.baseline.cmd == "" && opts.candidate.cmd == "" {
		return nil, usagef("compare: --env applies to --baseline-cmd/--candidate-cmd, and neither is given")
	}
	for _, kv := range opts.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, usagef("compare: --env %q: want KEY=VALUE", kv)
		}
	}
	var err error
	if su.formats, err = parseFormats(opts.formats); err != nil {
		return nil, err
	}
	if su.goals, err = analyzer.ParseGoals(opts.goals); err != nil {
		return nil, usagef("compare: --goal: %v", err)
	}

	// The load plan.
	p := replayer.LoadPlan{Duration: opts.duration}
	if opts.rate != "" {
		if opts.changedFlag("vus") {
			return nil, usagef("compare: --vus (closed model) and --rate (open model) conflict; give one")
		}
		r, err := replayer.ParseRate(opts.rate)
		if err != nil {
			return nil, usagef("compare: --rate: %v", err)
		}
		p.Rate = r
	} else {
		if opts.vus <= 0 {
			return nil, usagef("compare: --vus %d: want at least 1", opts.vus)
		}
		p.VUs = opts.vus
	}
	switch {
	case opts.duration <= 0:
		return nil, usagef("compare: --duration %s: want a positive duration per side, e.g. 20s", opts.duration)
	case opts.warmup < 0:
		return nil, usagef("compare: --warmup %s: want 0 or a positive duration", opts.warmup)
	case opts.slices < 0:
		return nil, usagef("compare: --slices %d: want a positive number", opts.slices)
	case opts.sequential && opts.slices > 0:
		return nil, usagef("compare: --slices applies to an interleaved comparison; --sequential runs each side in one piece")
	case opts.timeout <= 0:
		return nil, usagef("compare: --timeout %s: want a positive duration", opts.timeout)
	case opts.maxInFlight <= 0:
		return nil, usagef("compare: --max-inflight %d: want at least 1", opts.maxInFlight)
	case opts.startTimeout <= 0:
		return nil, usagef("compare: --start-timeout %s: want a positive duration", opts.startTimeout)
	case opts.changedFlag("reset") && strings.TrimSpace(opts.reset) == "":
		return nil, usagef("compare: --reset: want a command")
	}
	if opts.slices > 0 && opts.duration/time.Duration(opts.slices) < 50*time.Millisecond {
		return nil, usagef("compare: --slices %d cuts --duration %s into slices shorter than 50ms; give fewer slices or a longer duration", opts.slices, opts.duration)
	}
	if err := p.Validate(); err != nil {
		return nil, usagef("compare: %s", strings.TrimPrefix(err.Error(), replayer.ErrPlan.Error()+": "))
	}

	for i, side := range opts.sides() {
		h := http.Header{}
		for _, v := range append(slices.Clone(opts.headers), side.headers...) {
			k, val, ok := strings.Cut(v, ":")
			k = strings.TrimSpace(k)
			if !ok || k == "" || strings.ContainsAny(k, " \t") {
				return nil, usagef("compare: header %q: want 'Name: value'", v)
			}
			h.Set(k, strings.TrimSpace(val))
		}
		su.headers[i] = h
	}
	for _, e := range opts.endpoints {
		if !strings.ContainsAny(e, "/*") {
			return nil, usagef("compare: --endpoint %q: want 'METHOD /path' or '/path' (globs * and ? allowed)", e)
		}
	}
	for _, m := range opts.mocks {
		if m == "all" {
			continue
		}
		if h, port, err := net.SplitHostPort(m); err != nil || h == "" || port == "" {
			return nil, usagef("compare: --mock %q: want HOST:PORT of a recorded upstream, e.g. catalog.example.com:443", m)
		}
	}
	switch opts.mockTiming {
	case mock.TimingNone, mock.TimingRecorded:
	default:
		return nil, usagef("compare: --mock-timing %q: want recorded or none", opts.mockTiming)
	}
	switch opts.onMiss {
	case mock.OnMissError, mock.OnMissPassthrough:
	default:
		return nil, usagef("compare: --on-miss %q: want error or passthrough", opts.onMiss)
	}
	if opts.postgres != "" {
		if su.pgListen, su.pgServer, err = parseComparePostgres(opts.postgres); err != nil {
			return nil, err
		}
	}
	explain := opts.explain
	if explain < 0 {
		explain = 0
		if opts.postgres != "" {
			explain = compareDefaultExplain
		}
	}
	su.plan = replayer.ComparePlan{Load: p, Slices: opts.slices, Sequential: opts.sequential, Explain: explain, Warmup: opts.warmup}
	su.settings = opts.settingsMap(su)
	return su, nil
}

// parseComparePostgres reads --postgres: HOST:PORT, or LISTEN=HOST:PORT where
// LISTEN is "A,B" or one address (port P: P and P+1; port 0: both free).
func parseComparePostgres(spec string) (listen [2]string, server string, err error) {
	bad := usagef("compare: --postgres %q: want HOST:PORT of PostgreSQL, or LISTEN=HOST:PORT, e.g. 127.0.0.1:5432 or 127.0.0.1:6543=127.0.0.1:5432", spec)
	l, server, ok := strings.Cut(spec, "=")
	if !ok {
		l, server = "127.0.0.1:0", spec
	}
	if h, port, err := net.SplitHostPort(server); err != nil || h == "" || port == "" {
		return listen, "", bad
	}
	if a, b, two := strings.Cut(l, ","); two {
		listen = [2]string{strings.TrimSpace(a), strings.TrimSpace(b)}
	} else {
		host, port, err := net.SplitHostPort(l)
		if err != nil {
			return listen, "", bad
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 0 || n > 65534 {
			return listen, "", bad
		}
		next := 0
		if n > 0 {
			next = n + 1
		}
		listen = [2]string{net.JoinHostPort(host, port), net.JoinHostPort(host, strconv.Itoa(next))}
	}
	for _, a := range listen {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return listen, "", bad
		}
	}
	return listen, server, nil
}

// settingsMap records the comparison's settings in both run files; each
// side adds its own (compareSideSettings).
func (opts *compareOptions) settingsMap(su *compareSetup) map[string]string {
	p := su.plan
	s := map[string]string{"model": p.Load.Model()}
	put := func(k, v string) {
		if v != "" {
			s[k] = v
		}
	}
	load := ""
	if p.Load.Model() == "open" {
		load = "open model, " + p.Load.Rate.String()
		put(report.SettingRate, p.Load.Rate.String())
		put("max_inflight", strconv.Itoa(opts.maxInFlight))
	} else {
		load = "closed model, " + compareCount(p.Load.VUs, "VU")
		put(report.SettingVUs, strconv.Itoa(p.Load.VUs))
	}
	load += ", " + p.Load.Duration.String() + " per side"
	put(report.SettingLoad, load)
	put(report.SettingDuration, p.Load.Duration.String())
	if p.Sequential {
		put("order", "sequential")
	} else {
		slices := p.Slices
		if slices == 0 {
			slices = replayer.DefaultSlices(p.Load.Duration)
		}
		put("order", "interleaved")
		put("slices", strconv.Itoa(slices))
	}
	put("warmup", p.Warmup.String())
	put("explain", strconv.Itoa(p.Explain))
	put("timeout", opts.timeout.String())
	put("endpoints", strings.Join(opts.endpoints, ", "))
	put("goals", strings.Join(opts.goals, "; "))
	put("mock", strings.Join(opts.mocks, ", "))
	if len(opts.mocks) > 0 {
		put("mock_timing", opts.mockTiming)
		put("on_miss", opts.onMiss)
	}
	put("postgres", su.pgServer)
	put("reset", opts.reset)
	return s
}

// compareSideSettings adds one side's settings to the shared ones.
func compareSideSettings(shared map[string]string, opts *compareOptions, i int, side *compareSide, h http.Header) map[string]string {
	s := make(map[string]string, len(shared)+4)
	for k, v := range shared {
		s[k] = v
	}
	s["side"] = side.name
	if side.cmd != "" {
		// The side's own environment names the build in reports, e.g.
		// "APP_SLOW=1 ./orders": the command alone is often the same.
		s[report.SettingCmd] = strings.TrimSpace(strings.Join(redactEnv(side.env), " ") + " " + side.cmd)
		if env := redactEnv(append(slices.Clone(opts.env), side.env...)); len(env) > 0 {
			s["env"] = strings.Join(env, " ")
		}
	}
	var hs []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		v := h.Get(k)
		if secretName(k) {
			v = replayer.Redacted
		}
		hs = append(hs, k+": "+v)
	}
	if len(hs) > 0 {
		s["headers"] = strings.Join(hs, "; ")
	}
	return s
}

// secretName reports whether a header or variable name suggests a secret
// value, which is then not written to run files.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "cookie", "token", "secret", "password", "passwd", "key", "session", "signature", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// redactEnv returns KEY=VALUE entries fit for a report: secret-looking
// values hidden, passwords in URLs masked, values with spaces quoted.
func redactEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case secretName(k):
			v = replayer.Redacted
		case strings.Contains(v, "://"):
			if u, err := url.Parse(v); err == nil && u.User != nil {
				if _, has := u.User.Password(); has {
					v = u.Redacted()
				}
			}
		}
		if strings.ContainsAny(v, " \t'\"$`\\") {
			v = "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
		}
		out = append(out, k+"="+v)
	}
	return out
}

// compareCount formats n things: "1 VU", "4 VUs".
func compareCount(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// compareRun runs `replay compare`: a live comparison (opts.snapshot) or an
// offline one (opts.runs). It writes the first format to s.out, every
// format to the output directory, notices and progress to s.err, and
// returns the report; the caller maps !rep.Passed() to exit 99. Its errors
// are usage errors (usagef) or failures to run.
func compareRun(ctx context.Context, opts *compareOptions, s streams) (*report.ComparisonReport, error) {
	if len(opts.runs) > 0 {
		if len(opts.runs) != 2 {
			return nil, usagef("compare: give two run files, RUN_A RUN_B (got %d)", len(opts.runs))
		}
		su, err := opts.setupOffline()
		if err != nil {
			return nil, err
		}
		return compareOffline(ctx, opts, su, s)
	}
	su, err := opts.setup()
	if err != nil {
		return nil, err
	}
	return compareLive(ctx, opts, su, s)
}
