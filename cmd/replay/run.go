package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/snapshots"
)

type runOptions struct {
	snapshot     string
	target       string
	cmd          string
	env          []string
	out          string
	name         string
	vus          int
	duration     time.Duration
	rate         string
	iterations   int
	stages       []string
	speed        float64
	headers      []string
	endpoints    []string
	mocks        []string
	mockListen   string
	mockTiming   string
	onMiss       string
	caDir        string
	postgres     string
	pgTLS        pgTLSOptions
	sqlTraced    bool
	explain      int
	timeout      time.Duration
	maxInFlight  int
	startTimeout time.Duration
	buildLog     string
	goals        []string
	format       string

	stdout, stderr io.Writer
	outTTY         bool
	// changed reports whether a flag was given (load flags conflict only
	// when given).
	changed func(name string) bool
	// onTarget, when set, is told the target URL once it answers (tests).
	onTarget func(url string)
}

func newCmdRun(s streams) *cobra.Command {
	opts := &runOptions{stdout: s.out, stderr: s.err, outTTY: s.outTTY}
	cmd := &cobra.Command{
		Use:   "run --snapshot SNAP (--target URL | --cmd CMD) --out RUN [load flags] [--goal G]...",
		Short: "Replay a snapshot's inbound requests against one build under a load model",
		Long: `run replays the snapshot's recorded inbound requests against one target and
writes every replayed request to the run file RUN, then prints the result.

The target is a URL (--target), or a command replay starts after its own
proxies listen and stops at the end (--cmd, run with /bin/sh -c). A started
build gets PORT (the port to listen on), HTTP_PROXY/HTTPS_PROXY (the mock,
with --mock), SSL_CERT_FILE/REQUESTS_CA_BUNDLE/NODE_EXTRA_CA_CERTS (replay's
CA), and with --postgres every variable containing the database's HOST:PORT
(DATABASE_URL, --env values) rewritten to the SQL counter's address, plus
REPLAY_SQLCOUNT_ADDR. With --target, start the build after replay printed
these settings; replay waits until the target answers.

Load models (one at a time):
  closed (default)  --vus N virtual users each send the next request as soon as
                    the previous one is answered; --stage D:N ramps them (k6-style)
  open              --rate R (200/s, 1000/m) starts requests at fixed times;
                    latency counts from the intended start, so a stalled target
                    shows as latency, late starts and failed "not sent" requests
  as recorded       --speed X replays the recorded arrival times, X times faster
--duration and --iterations (passes over the snapshot) bound each model; with
no load flag, every recorded request is sent once by one virtual user.

Requests go out as recorded (method, path, query, headers, body) to the
target's host, with --header added or replacing recorded ones (redacted
recorded values are dropped unless supplied), and a fresh W3C traceparent.

Exit codes: 0 all goals met, 99 a goal missed, 1 could not run, 2 bad usage.`,
		Example: `  replay run --snapshot orders.snap --target http://127.0.0.1:8080 --out run.db
  replay run --snapshot orders.snap --cmd 'go run ./examples/orders' --env APP_SLOW=1 \
      --mock catalog.example:443 --postgres 127.0.0.1:6543=127.0.0.1:5432 \
      --vus 10 --duration 30s --out run.db --goal 'p95<200ms' --goal 'GET /orders: sql<=5'
  replay run --snapshot orders.snap --target http://127.0.0.1:8080 --rate 200/s --duration 1m --out run.db`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.changed = cmd.Flags().Changed
			return runRun(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.snapshot, "snapshot", "", "snapshot `FILE` to replay")
	f.StringVar(&opts.target, "target", "", "base `URL` of the build to replay against")
	f.StringVar(&opts.cmd, "cmd", "", "`COMMAND` that starts the build (run with /bin/sh -c; must listen on $PORT)")
	f.StringArrayVar(&opts.env, "env", nil, "`KEY=VALUE` in the environment of --cmd (repeatable)")
	f.StringVar(&opts.out, "out", "", "run `FILE` to create (must not exist)")
	f.StringVar(&opts.name, "name", "run", "`NAME` of the run, for reports")
	f.IntVar(&opts.vus, "vus", 1, "closed model: `N` virtual users")
	f.DurationVar(&opts.duration, "duration", 0, "run for `D` (e.g. 30s)")
	f.StringVar(&opts.rate, "rate", "", "open model: `R` requests per unit (200/s, 50/1s, 1000/m)")
	f.IntVar(&opts.iterations, "iterations", 0, "send `N` passes over the recorded requests")
	f.StringArrayVar(&opts.stages, "stage", nil, "closed model: ramp to N virtual users over D, `D:N` (repeatable, e.g. --stage 30s:10 --stage 1m:20)")
	f.Float64Var(&opts.speed, "speed", 0, "as recorded: replay the recorded arrival times `X` times faster (1 as recorded)")
	f.StringArrayVar(&opts.headers, "header", nil, "add or replace header `'K: V'` on every request (repeatable)")
	f.StringArrayVar(&opts.endpoints, "endpoint", nil, "replay only `ENDPOINT` ('GET /orders/{id}', a glob 'GET /orders*', or a path glob '/orders/*'; repeatable)")
	f.StringArrayVar(&opts.mocks, "mock", nil, "mock upstream `HOST:PORT` from the snapshot (repeatable; 'all' mocks every recorded upstream)")
	f.StringVar(&opts.mockListen, "mock-listen", "127.0.0.1:0", "`ADDR` the mock's forward proxy listens on")
	f.StringVar(&opts.mockTiming, "mock-timing", "none", "mock answers at once (none) or after the recorded duration (recorded)")
	f.StringVar(&opts.onMiss, "on-miss", "error", "a request the mock cannot answer fails (error) or goes to the real upstream (passthrough)")
	f.StringVar(&opts.caDir, "ca-dir", "", "`DIR` of replay's CA for mocking HTTPS (default $XDG_CONFIG_HOME/replay/ca or ~/.config/replay/ca)")
	f.StringVar(&opts.postgres, "postgres", "", "count SQL per request: `LISTEN=HOST:PORT` runs the SQL counter on LISTEN in front of PostgreSQL at HOST:PORT")
	opts.pgTLS.addFlags(f, "postgres-")
	f.BoolVar(&opts.sqlTraced, "sql-traced", false, "the build puts each request's traceparent in its SQL comments (sqlcommenter): count SQL under load too")
	f.IntVar(&opts.explain, "explain", -1, "replay `N` requests of every endpoint one at a time first, for exact SQL counts (default 3 with --postgres, else 0)")
	f.DurationVar(&opts.timeout, "timeout", replayer.DefaultTimeout, "per-request timeout `D`")
	f.IntVar(&opts.maxInFlight, "max-inflight", replayer.DefaultMaxInFlight, "at most `N` requests in flight (and connections); raised to --vus")
	f.DurationVar(&opts.startTimeout, "start-timeout", 60*time.Second, "wait at most `D` for the target to answer")
	f.StringVar(&opts.buildLog, "build-log", "", "`FILE` for the output of --cmd (default RUN.build.log)")
	f.StringArrayVar(&opts.goals, "goal", nil, "goal `G` the run must meet, e.g. 'p95<500ms', 'success>99%', 'GET /orders: sql<=5' (repeatable)")
	f.StringVar(&opts.format, "format", "text", "output `FORMAT`: text, json, markdown, junit or html")
	return cmd
}

// runSetup is the validated form of runOptions.
type runSetup struct {
	plan     replayer.LoadPlan
	header   http.Header
	goals    []analyzer.Goal
	format   report.Format
	pgListen string
	pgServer string
	explain  int
	settings map[string]string
}

func (opts *runOptions) changedFlag(name string) bool {
	return opts.changed != nil && opts.changed(name)
}

// setup validates opts; its errors are usage errors.
func (opts *runOptions) setup() (*runSetup, error) {
	su := &runSetup{settings: map[string]string{}}
	switch {
	case opts.snapshot == "":
		return nil, usagef("run: --snapshot SNAP is required")
	case opts.out == "":
		return nil, usagef("run: --out RUN is required")
	case opts.target == "" && opts.cmd == "":
		return nil, usagef("run: give the build to replay against: --target URL or --cmd COMMAND")
	case opts.target != "" && opts.cmd != "":
		return nil, usagef("run: --target and --cmd both name the build; give one")
	case len(opts.env) > 0 && opts.cmd == "":
		return nil, usagef("run: --env applies to --cmd, which is not given")
	}
	format, err := report.ParseFormat(opts.format)
	if err != nil {
		return nil, usagef("run: --format %q: want text, json, markdown, junit or html", opts.format)
	}
	su.format = format
	if opts.target != "" {
		u, err := url.Parse(opts.target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("run: --target %q: want an http:// or https:// URL, e.g. http://127.0.0.1:8080", opts.target)
		}
	}
	for _, kv := range opts.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, usagef("run: --env %q: want KEY=VALUE", kv)
		}
	}

	// The load plan.
	p := replayer.LoadPlan{Duration: opts.duration, Iterations: opts.iterations, Speed: opts.speed}
	if opts.changedFlag("vus") {
		p.VUs = opts.vus
		if opts.vus <= 0 {
			return nil, usagef("run: --vus %d: want at least 1", opts.vus)
		}
	}
	if opts.rate != "" {
		r, err := replayer.ParseRate(opts.rate)
		if err != nil {
			return nil, usagef("run: --rate: %v", err)
		}
		p.Rate = r
	}
	for _, s := range opts.stages {
		st, err := replayer.ParseStage(s)
		if err != nil {
			return nil, usagef("run: --stage: %v", err)
		}
		p.Stages = append(p.Stages, st)
	}
	if opts.changedFlag("speed") && opts.speed <= 0 {
		return nil, usagef("run: --speed %g: want a positive factor, e.g. 1 or 2", opts.speed)
	}
	if opts.changedFlag("duration") && opts.duration <= 0 {
		return nil, usagef("run: --duration %s: want a positive duration", opts.duration)
	}
	if opts.changedFlag("iterations") && opts.iterations <= 0 {
		return nil, usagef("run: --iterations %d: want at least 1", opts.iterations)
	}
	if err := p.Validate(); err != nil {
		return nil, usagef("run: %s", runPlanFlagNames(strings.TrimPrefix(err.Error(), replayer.ErrPlan.Error()+": ")))
	}
	if opts.timeout <= 0 {
		return nil, usagef("run: --timeout %s: want a positive duration", opts.timeout)
	}
	if opts.maxInFlight <= 0 {
		return nil, usagef("run: --max-inflight %d: want at least 1", opts.maxInFlight)
	}
	if opts.startTimeout <= 0 {
		return nil, usagef("run: --start-timeout %s: want a positive duration", opts.startTimeout)
	}

	su.header = http.Header{}
	for _, h := range opts.headers {
		k, v, ok := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, usagef("run: --header %q: want 'Name: value'", h)
		}
		su.header.Add(k, strings.TrimSpace(v))
	}
	if err := checkReplayFlags("run", opts.endpoints, opts.mocks, opts.mockTiming, opts.onMiss); err != nil {
		return nil, err
	}
	if opts.postgres != "" {
		listen, server, ok := strings.Cut(opts.postgres, "=")
		_, _, err1 := net.SplitHostPort(listen)
		h, port, err2 := net.SplitHostPort(server)
		if !ok || err1 != nil || err2 != nil || h == "" || port == "" {
			return nil, usagef("run: --postgres %q: want LISTEN=HOST:PORT, e.g. 127.0.0.1:6543=127.0.0.1:5432", opts.postgres)
		}
		su.pgListen, su.pgServer = listen, server
	}
	if err := opts.pgTLS.validate("run", opts.postgres != ""); err != nil {
		return nil, err
	}
	su.explain = opts.explain
	if su.explain < 0 {
		su.explain = 0
		if opts.postgres != "" {
			su.explain = 3
		}
	}
	p.Explain = su.explain
	goals, err := analyzer.ParseGoals(opts.goals)
	if err != nil {
		return nil, usagef("run: --goal: %v", err)
	}
	su.goals = goals
	su.plan = p
	su.settings = opts.settingsMap(p)
	return su, nil
}

// runPlanFlagNames rewrites a plan error's field names as the flags that set them.
func runPlanFlagNames(msg string) string {
	r := strings.NewReplacer("vus", "--vus", "stages", "--stage", "rate", "--rate", "speed", "--speed",
		"duration", "--duration", "iterations", "--iterations")
	return r.Replace(msg)
}

// settingsMap records the run's settings in the run file (header values
// that look secret are hidden).
func (opts *runOptions) settingsMap(p replayer.LoadPlan) map[string]string {
	s := map[string]string{"model": p.Model(), report.SettingLoad: runLoadDescription(p)}
	put := func(k, v string) {
		if v != "" {
			s[k] = v
		}
	}
	d, it := p.Duration, p.Iterations
	switch p.Model() {
	case "closed":
		if len(p.Stages) > 0 {
			var st []string
			for _, x := range p.Stages {
				st = append(st, x.String())
			}
			put("stages", strings.Join(st, " "))
			put("vus", strconv.Itoa(p.VUs))
		} else {
			put("vus", strconv.Itoa(max(p.VUs, 1)))
		}
	case "open":
		put("rate", p.Rate.String())
		put("max_inflight", strconv.Itoa(opts.maxInFlight))
	case "recorded":
		put("speed", strconv.FormatFloat(p.Speed, 'g', -1, 64))
	}
	if d > 0 {
		put("duration", d.String())
	}
	if it > 0 || (d == 0 && len(p.Stages) == 0) {
		put("iterations", strconv.Itoa(max(it, 1)))
	}
	put("timeout", opts.timeout.String())
	if p.Explain > 0 {
		put("explain", strconv.Itoa(p.Explain))
	}
	put("endpoints", strings.Join(opts.endpoints, ", "))
	var hs []string
	for _, h := range opts.headers {
		k, v, _ := strings.Cut(h, ":")
		k = strings.TrimSpace(k)
		if runSecretHeader(k) {
			v = " " + replayer.Redacted
		}
		hs = append(hs, k+":"+v)
	}
	put("headers", strings.Join(hs, "; "))
	put("goals", strings.Join(opts.goals, "; "))
	put("cmd", opts.cmd)
	put("mock", strings.Join(opts.mocks, ", "))
	if len(opts.mocks) > 0 {
		put("mock_timing", opts.mockTiming)
		put("on_miss", opts.onMiss)
	}
	put("postgres", opts.postgres)
	if opts.pgTLS.offer {
		put("postgres_tls", "offered")
	}
	if opts.pgTLS.upstreamOn() {
		put("postgres_upstream_tls", opts.pgTLS.upstream)
	}
	return s
}

// runSecretHeader reports whether a header's value should not be written to
// the run file.
func runSecretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "cookie", "token", "secret", "password", "key", "session", "signature"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

func runRun(ctx context.Context, opts *runOptions) error {
	su, err := opts.setup()
	if err != nil {
		return err
	}
	// Stderr for notes when stdout must stay clean JSON (or other
	// machine-readable output).
	notes := opts.stdout
	if su.format != report.Text {
		notes = opts.stderr
	}

	inbound, outbound, err := loadExchanges(ctx, "run", opts.snapshot, len(opts.mocks) > 0)
	if err != nil {
		return err
	}
	if _, err := os.Stat(opts.out); err == nil {
		return fmt.Errorf("run: %s: %w", opts.out, snapshots.ErrExists)
	}

	env, err := startRunEnvironment(ctx, opts, su, outbound)
	if err != nil {
		return err
	}
	defer env.close()
	if env.mockAddr != "" && opts.target != "" {
		services := strings.Join(env.mock.Services(), ", ")
		if services == "" {
			services = "no recorded upstream"
		}
		w := env.wiring
		fmt.Fprintf(notes, "mock: answering %s on %s; start the build with:\n  HTTP_PROXY=http://%s HTTPS_PROXY=http://%s NO_PROXY=localhost,127.0.0.1,::1 SSL_CERT_FILE=%s NODE_EXTRA_CA_CERTS=%s\n",
			services, env.mockAddr, w.Proxy, w.Proxy, w.CABundle, w.CACert)
	}
	if env.sqlAddr != "" && opts.target != "" {
		fmt.Fprintf(notes, "sqlcount: counting SQL on %s in front of %s; point the build's database at %s\n", env.sqlAddr, su.pgServer, env.sqlAddr)
	}
	if opts.target != "" && (env.mockAddr != "" || env.sqlAddr != "") {
		fmt.Fprintf(notes, "waiting up to %s for %s to listen…\n", opts.startTimeout, opts.target)
	}

	targetURL := opts.target
	buildLog := opts.buildLog
	if buildLog == "" {
		buildLog = opts.out + ".build.log"
	}
	if opts.cmd != "" {
		proc, err := replayer.StartBuild(ctx, replayer.Build{Cmd: opts.cmd, Env: opts.env, LogPath: buildLog, StartTimeout: opts.startTimeout}, env.wiring)
		if err != nil {
			return err
		}
		env.build = proc
		targetURL = proc.URL()
	} else if err := replayer.WaitReady(ctx, targetURL, opts.startTimeout); err != nil {
		return err
	}
	if opts.onTarget != nil {
		opts.onTarget(targetURL)
	}

	cfg := replayer.Config{
		Target:      targetURL,
		Exchanges:   inbound,
		Endpoints:   opts.endpoints,
		Header:      su.header,
		Timeout:     opts.timeout,
		MaxInFlight: max(opts.maxInFlight, su.plan.VUs, runMaxStage(su.plan)),
		SQLTraced:   opts.sqlTraced,
	}
	if env.sql != nil {
		cfg.SQL = env.sql
	}
	rp, err := replayer.New(cfg)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer rp.Close()

	info := snapshots.RunInfo{Name: opts.name, Snapshot: opts.snapshot, Target: targetURL, Started: time.Now(), Settings: su.settings}
	rw, err := snapshots.CreateRun(opts.out, info)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	var pl *runProgress
	if opts.outTTY {
		pl = newRunProgress(notes)
		su.plan.Progress = pl.update
	}
	// Results go to the run file and, as they come, to the summary, so the
	// report needs no second pass over the file.
	sink := newRunSummarySink(ctx, rw, info)
	st, runErr := rp.Run(ctx, su.plan, sink)
	if pl != nil {
		pl.clear()
	}
	sum, sumErr := sink.summary()
	if env.build != nil {
		if err := env.build.Stop(); err != nil {
			fmt.Fprintf(opts.stderr, "replay: warning: %v\n", err)
		}
	}
	info.Ended = time.Now()
	if env.mock != nil {
		info.MockMisses = env.mock.Misses()
	}
	if env.sql != nil {
		info.Statements = env.sql.Stats().Statements
	}
	stallSettings(su.settings, st)
	info.Settings = su.settings
	if err := rw.Close(info); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return fmt.Errorf("run: %w", runErr)
	}
	if sumErr != nil {
		return fmt.Errorf("run: summarize: %w", sumErr)
	}
	sum.Info = info
	rep := &report.RunReport{Summary: sum, Goals: analyzer.Check(sum, su.goals), Artifacts: []report.Artifact{{Name: "run file", Path: opts.out}}}
	if env.build != nil {
		rep.Artifacts = append(rep.Artifacts, report.Artifact{Name: "build log", Path: buildLog})
	}
	if err := report.WriteRun(opts.stdout, su.format, rep); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	passed := rep.Passed()
	if st.NotSent > 0 || st.Late > 0 {
		fmt.Fprintf(opts.stderr, "replay: the target fell behind the open model: all %d allowed requests were in flight (--max-inflight), so %d requests started late (up to %s after their intended start) and %d could not be sent at all (failed as %q); latency counts from the intended start\n",
			st.MaxInFlight, st.Late, st.MaxLate.Round(time.Millisecond), st.NotSent, "not sent: target stalled")
	}
	if info.MockMisses > 0 {
		fmt.Fprintf(opts.stderr, "replay: the mock could not answer %d outbound requests; see 'replay mock' for the closest recorded ones\n", info.MockMisses)
	}
	if runErr != nil {
		return errors.New("run interrupted; the run file holds the requests completed so far")
	}
	if !passed {
		return errFailed
	}
	return nil
}

// stallSettings records in a run file's settings how far its target fell
// behind the open model (replay run and each side of replay compare).
func stallSettings(s map[string]string, st replayer.Stats) {
	if st.Late > 0 {
		s["late_requests"] = strconv.FormatInt(st.Late, 10)
		s["max_late"] = st.MaxLate.Round(time.Millisecond).String()
	}
	if st.NotSent > 0 {
		s["not_sent"] = strconv.FormatInt(st.NotSent, 10)
	}
}

func runMaxStage(p replayer.LoadPlan) int {
	m := 0
	for _, s := range p.Stages {
		m = max(m, s.Target)
	}
	return m
}
