package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
	"github.com/replaykit/replay/dashboard"
	"github.com/replaykit/replay/internal/flagval"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
)

// replayFlags are the flags `replay run` and `replay compare` share: what
// is replayed, the mocks, the SQL counters, the limits and the goals.
type replayFlags struct {
	freeSpools   func() // set by config
	snapshot     string
	endpoints    []string
	headers      []string
	mock         mockFlags
	postgres     postgresFlags
	mysql        postgresFlags // named mysql
	sqlTraced    bool
	explain      int // negative: session.DefaultExplain when SQL is counted, else 0
	timeout      time.Duration
	maxInFlight  int
	conns        int // HTTP/2 connections per side
	proto        protoFlags
	startTimeout time.Duration
	goals        []string
	limits       listen.Limits
	rules        respdiff.Rules // how answers are compared
	dashboard    dashboard.Options
	state        stateFlags // tokens, correlation, moved timestamps
	// changed reports whether a flag was given (some conflict only then).
	changed func(name string) bool
}

func (r *replayFlags) changedFlag(name string) bool { return r.changed != nil && r.changed(name) }

func (r *replayFlags) addFlags(f *pflag.FlagSet) {
	r.explain = -1
	f.StringVar(&r.snapshot, "snapshot", "", "snapshot `FILE` to replay")
	f.StringArrayVar(&r.endpoints, "endpoint", nil, "replay only `ENDPOINT` ('GET /orders/{id}', a glob 'GET /orders*', or a path glob '/orders/*'; repeatable)")
	f.StringArrayVar(&r.headers, "header", nil, "add or replace header `'K: V'` on every request (repeatable)")
	r.mock.addFlags(f)
	r.postgres.addFlags(f)
	r.mysql = mysqlFlags()
	r.mysql.addFlags(f)
	r.limits.AddFlags(f)
	r.rules.AddFlags(f)
	r.dashboard.AddFlags(f)
	r.state.addFlags(f)
	r.proto.addFlags(f)
	f.BoolVar(&r.proto.reflect, "proto-reflect", false, "decode gRPC messages with the field names the target's server reflection gives (asked once per run; kept beside the run file as RUN.protoset)")
	f.BoolVar(&r.sqlTraced, "sql-traced", false, "the build puts each request's traceparent in its SQL comments (sqlcommenter): count SQL under load too")
	f.Var(flagval.AutoInt{V: &r.explain}, "explain", "replay up to `N` distinct requests (method, path, query, body) of every endpoint one at a time first (on each side), after one warm-up request per endpoint, for exact SQL counts weighted by the load's mix (default 10 with --postgres or --mysql, else 0)")
	f.DurationVar(&r.timeout, "timeout", replayer.DefaultTimeout, "per-request timeout `D`")
	f.IntVar(&r.maxInFlight, "max-inflight", replayer.DefaultMaxInFlight, "at most `N` requests in flight (and connections), per side; raised to --vus")
	f.IntVar(&r.conns, "conns", replayer.DefaultConns, "send the requests recorded over HTTP/2 (gRPC calls among them) as streams over `N` connections per side")
	f.DurationVar(&r.startTimeout, "start-timeout", session.DefaultStartTimeout, "wait at most `D` for each build to answer")
	f.StringArrayVar(&r.goals, "goal", nil, "goal `G` the run (the candidate) must meet, e.g. 'p95<500ms', 'success>99%', 'GET /orders: sql<=5', 'cpu<=200us' (repeatable)")
}

// replaySetup is the validated form of replayFlags.
type replaySetup struct {
	pgListen []string // per side
	pgServer string
	myListen []string // per side, of --mysql
	myServer string
	explain  int
	goals    []analyzer.Goal
}

// validate checks the flags for sides sides; its errors are usage errors
// prefixed with cmd.
func (r *replayFlags) validate(cmd string, sides int) (*replaySetup, error) {
	su := &replaySetup{}
	for _, e := range r.endpoints {
		if !strings.ContainsAny(e, "/*") {
			return nil, usagef("%s: --endpoint %q: want 'METHOD /path' or '/path' (globs * and ? allowed)", cmd, e)
		}
	}
	if err := r.mock.validate(cmd); err != nil {
		return nil, err
	}
	var err error
	if su.pgListen, su.pgServer, err = r.postgres.parse(cmd, sides); err != nil {
		return nil, err
	}
	if su.myListen, su.myServer, err = r.mysql.parse(cmd, sides); err != nil {
		return nil, err
	}
	switch {
	case r.timeout <= 0:
		return nil, usagef("%s: --timeout %s: want a positive duration", cmd, r.timeout)
	case r.maxInFlight <= 0:
		return nil, usagef("%s: --max-inflight %d: want at least 1", cmd, r.maxInFlight)
	case r.conns <= 0:
		return nil, usagef("%s: --conns %d: want at least 1", cmd, r.conns)
	case r.startTimeout <= 0:
		return nil, usagef("%s: --start-timeout %s: want a positive duration", cmd, r.startTimeout)
	}
	su.explain = r.explain
	if su.explain < 0 {
		su.explain = 0
		if r.postgres.used() || r.mysql.used() {
			su.explain = session.DefaultExplain
		}
	}
	if su.goals, err = analyzer.ParseGoals(r.goals); err != nil {
		return nil, usagef("%s: --goal: %v", cmd, err)
	}
	if err := r.rules.Validate(); err != nil {
		return nil, usagef("%s: %v", cmd, err)
	}
	if err := r.state.validate(cmd); err != nil {
		return nil, err
	}
	return su, nil
}

// config opens the snapshot, spools it when spool, and returns the
// session's shared config (the dashboard's URL goes to notes); its errors
// are prefixed with cmd.
func (r *replayFlags) config(ctx context.Context, cmd string, su *replaySetup, notes io.Writer, spool bool) (session.Config, error) {
	c := session.Config{Snapshot: r.snapshot, Endpoints: r.endpoints, Timeout: r.timeout, MaxInFlight: r.maxInFlight, Conns: r.conns,
		SQLTraced: r.sqlTraced, StartTimeout: r.startTimeout, AllowTruncated: r.mock.allowTruncated, Limits: r.limits,
		Responses: session.ResponseCapture{Headers: r.rules.Headers}, Observer: r.dashboard.Observer(notes),
		State: r.state.config()}
	dec, err := r.proto.decoder(ctx, cmd)
	if err != nil {
		return c, err
	}
	c.Responses.Messages, c.Responses.Reflect = dec, r.proto.reflect
	done := report.IndexingNote(notes, r.snapshot, isTerminalWriter(notes))
	rec, err := session.OpenRecording(ctx, r.snapshot, r.endpoints)
	if err != nil {
		return c, fmt.Errorf("%s: %w", cmd, err)
	}
	c.Source, c.Mock, c.CADir = rec.Source, r.mock.config(rec.Snapshot), r.mock.caDir
	calls := 0
	if c.Mock != nil {
		// The session would index the recorded calls itself; here, the
		// terminal hears when it is done.
		if c.Mock.Index, err = mock.NewIndex(ctx, *c.Mock); err != nil {
			return c, fmt.Errorf("%s: %w", cmd, err)
		}
		calls = c.Mock.Index.Calls()
	}
	var spooled int64
	if spool { // not in the coordinator of --local shards: it replays nothing itself
		if spooled, r.freeSpools, err = rec.Spool(ctx, c.Mock, notes); err != nil {
			return c, fmt.Errorf("%s: %w", cmd, err)
		}
	}
	done(rec.Source.Len(), calls, spooled)
	if su.pgServer != "" {
		if c.Postgres, err = r.postgres.config(su.pgServer, su.pgListen[0], r.mock.caDir); err != nil {
			return c, fmt.Errorf("%s: sqlcount: %w", cmd, err)
		}
	}
	if su.myServer != "" {
		if c.MySQL, err = r.mysql.config(su.myServer, su.myListen[0], r.mock.caDir); err != nil {
			return c, fmt.Errorf("%s: sqlcount: %w", cmd, err)
		}
	}
	return c, nil
}

// close frees the spools.
func (r *replayFlags) close() {
	if r.freeSpools != nil {
		r.freeSpools()
	}
}

// settings are what the run files record of the flags beyond what the
// session records itself.
func (r *replayFlags) settings() map[string]string {
	s := map[string]string{}
	if r.postgres.tls.upstreamOn() {
		s["postgres_upstream_tls"] = r.postgres.tls.upstream
	}
	if r.mysql.tls.upstreamOn() {
		s["mysql_upstream_tls"] = r.mysql.tls.upstream
	}
	r.state.settings(s)
	if r.conns != replayer.DefaultConns {
		s["conns"] = strconv.Itoa(r.conns)
	}
	if len(r.proto.files) > 0 {
		s[session.SettingProto] = strings.Join(absPaths(r.proto.files), "\n")
		s[session.SettingProtoPath] = strings.Join(absPaths(r.proto.paths), "\n")
	}
	return s
}
