package main

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
)

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
				return nil, usagef("compare: --format %q: want text, json, markdown, junit or html", name)
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
		"endpoint", "mock", "mock-timing", "on-miss", "ca-dir", "postgres", "postgres-tls", "postgres-upstream-tls", "postgres-upstream-tls-ca", "sql-traced", "timeout", "max-inflight", "start-timeout"} {
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
	if err := checkReplayFlags("compare", opts.endpoints, opts.mocks, opts.mockTiming, opts.onMiss); err != nil {
		return nil, err
	}
	if opts.postgres != "" {
		if su.pgListen, su.pgServer, err = parseComparePostgres(opts.postgres); err != nil {
			return nil, err
		}
	}
	if err := opts.pgTLS.validate("compare", opts.postgres != ""); err != nil {
		return nil, err
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
	if opts.pgTLS.offer {
		put("postgres_tls", "offered")
	}
	if opts.pgTLS.upstreamOn() {
		put("postgres_upstream_tls", opts.pgTLS.upstream)
	}
	put("reset", opts.reset)
	return s
}

// compareSideSettings adds one side's settings to the shared ones.
func compareSideSettings(shared map[string]string, opts *compareOptions, side *compareSide, h http.Header) map[string]string {
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
