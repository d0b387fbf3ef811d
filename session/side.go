package session

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// Side is one side of a session while it runs: its mock and SQL counter,
// its build, its replayer and its run file.
type Side struct {
	cfg    *Config
	sc     SideConfig
	paired bool // one of two sides: its run file names it

	mock     *mock.Server
	mockSrv  *http.Server
	mockAddr string
	sql      sqlcount.Counters // nil without
	sqlAddrs []string          // where each counts
	sqlAddr  string            // the first's (PostgreSQL's when it counts)
	sqlCtx   context.Context   // the counters serve until it is done
	sqlStop  context.CancelFunc
	sqlDone  []chan struct{}
	wiring   replayer.Wiring

	build  *replayer.Process
	cpu    *buildCPU           // the build's CPU time per load call; nil for a URL
	exit   *analyzer.BuildExit // how build ended during the run; nil when it ran on
	target string
	rp     *replayer.Replayer
	run    *snapshots.RunWriter
	info   snapshots.RunInfo
	load   loadSQL
}

// Name is the side's name.
func (s *Side) Name() string { return s.sc.Name }

// URL is the build's URL as given (SideConfig.URL); empty for a build
// replay starts.
func (s *Side) URL() string { return s.sc.URL }

// MockAddr is the address the side's mock listens on; empty without one.
func (s *Side) MockAddr() string { return s.mockAddr }

// MockServices lists the recorded services the mock answers for.
func (s *Side) MockServices() []string {
	if s.mock == nil {
		return nil
	}
	return s.mock.Services()
}

// MockMisses counts the outbound requests the side's mock could not
// answer.
func (s *Side) MockMisses() int64 {
	if s.mock == nil {
		return 0
	}
	return s.mock.Misses()
}

// MissLog describes the side's mock misses, each with the closest recorded
// request (see mock.Server.MissLog).
func (s *Side) MissLog() []*mock.MissError {
	if s.mock == nil {
		return nil
	}
	return s.mock.MissLog()
}

// SQLAddr is the address the side's SQL counter listens on (the first, with
// two: PostgreSQL's); empty without one.
func (s *Side) SQLAddr() string { return s.sqlAddr }

// SQLAddrs are the addresses of the side's SQL counters, one per database
// server (PostgreSQL's, then MySQL's).
func (s *Side) SQLAddrs() []string { return s.sqlAddrs }

// Wiring is what the build must point at: the mock as its proxy, replay's
// CA, the SQL counter as its database.
func (s *Side) Wiring() replayer.Wiring { return s.wiring }

// Target is the URL replayed to, once the build answers.
func (s *Side) Target() string { return s.target }

// Started reports whether replay started the build (a command side).
func (s *Side) Started() bool { return s.build != nil }

// LogPath is the build's log file, for a build replay starts.
func (s *Side) LogPath() string { return s.sc.LogPath }

// listen makes the side's mock and SQL counter listen; the side is to be
// closed whatever it returns.
func (s *Side) listen(ctx context.Context) error {
	if c := s.cfg.Mock; c != nil {
		if err := s.startMock(*c); err != nil {
			return s.wrap(err) // "mock: …" already
		}
	}
	for _, db := range s.cfg.databases(s.sc) {
		if err := s.startSQLCounter(ctx, db); err != nil {
			return fmt.Errorf("%ssqlcount: %w", s.label(), err)
		}
	}
	return nil
}

// label names the side in errors, "baseline " (with a space), when it is
// one of two; empty when alone.
func (s *Side) label() string {
	if s.paired {
		return s.sc.Name + " "
	}
	return ""
}

// wrap names the side in err when it is one of two.
func (s *Side) wrap(err error) error {
	if s.paired {
		return fmt.Errorf("%s: %w", s.sc.Name, err)
	}
	return err
}

// startMock starts the side's mock; its errors say "mock: ", as package
// mock's do.
func (s *Side) startMock(cfg mock.Config) error {
	cfg.CA, cfg.Limits = s.cfg.authority, s.cfg.Limits
	m, err := mock.New(cfg)
	if err != nil {
		return err
	}
	s.mock = m
	l, err := s.openListener(orLoopback(s.sc.MockListen), "mock's forward proxy", "it forwards requests for hosts it does not mock to any host")
	if err != nil {
		return fmt.Errorf("mock: %w", err)
	}
	s.mockAddr = l.Addr().String()
	s.mockSrv = s.cfg.Limits.Server(m, nil)
	go s.mockSrv.Serve(l)
	s.wiring.Proxy, s.wiring.CACert = s.mockAddr, s.cfg.authority.CertPath()
	if s.wiring.CABundle, err = s.cfg.authority.BundlePath(); err != nil {
		return fmt.Errorf("mock: %w", err)
	}
	return nil
}

// openListener opens one of the side's listeners (see Config.Limits), warning
// through Config.Warn when it is reachable from the network.
func (s *Side) openListener(addr, what, reach string) (net.Listener, error) {
	if s.sc.Name != "" && s.paired {
		what = s.sc.Name + "'s " + what
	}
	return s.cfg.Limits.Listen(addr, what, reach, listen.WarnLogger(s.cfg.Warn), s.cfg.Warn)
}

// startSQLCounter serves the side's SQL counter until close, whatever
// becomes of ctx.
func (s *Side) startSQLCounter(ctx context.Context, db database) error {
	what := "SQL counter"
	if len(s.cfg.databases(s.sc)) > 1 {
		what = db.protocol + " SQL counter"
	}
	l, err := s.openListener(orLoopback(db.listen), what, "it forwards connections to the database")
	if err != nil {
		return err
	}
	cfg := sqlcount.Config{Upstream: db.Upstream, Protocol: db.protocol, ClientTLS: db.ClientTLS, UpstreamTLS: db.UpstreamTLS, KeepUnattributed: true}
	cfg.StartupTimeout, cfg.IdleTimeout = s.cfg.Limits.SQLTimeouts()
	p, err := sqlcount.New(cfg)
	if err != nil {
		l.Close()
		return err
	}
	addr := l.Addr().String()
	s.sql = append(s.sql, p)
	s.sqlAddrs = append(s.sqlAddrs, addr)
	if s.sqlStop == nil {
		s.sqlCtx, s.sqlStop = context.WithCancel(context.WithoutCancel(ctx))
	}
	done := make(chan struct{})
	s.sqlDone = append(s.sqlDone, done)
	go func() {
		defer close(done)
		p.Serve(s.sqlCtx, l)
	}()
	if s.sqlAddr == "" {
		s.sqlAddr = addr
	}
	proto, ok := replayer.DatabaseProtocolNamed(db.protocol)
	if !ok {
		return fmt.Errorf("no environment rewriting for protocol %q", db.protocol)
	}
	route := replayer.DatabaseRoute{Protocol: proto, Upstream: db.Upstream, Listen: db.Listen, Counter: addr}
	if s.paired && proto.AppVar != "" {
		route.App = "replay-" + s.sc.Name
	}
	s.wiring.Databases = append(s.wiring.Databases, route)
	return nil
}

// start starts the build, or waits until its URL answers.
func (s *Side) start(ctx context.Context) error {
	if s.sc.Cmd == "" {
		if err := replayer.WaitReady(ctx, s.sc.URL, s.cfg.startTimeout()); err != nil {
			return s.wrap(err)
		}
		s.target = s.sc.URL
		return nil
	}
	b := replayer.Build{Cmd: s.sc.Cmd, Env: append(slices.Clone(s.cfg.Env), s.sc.Env...), LogPath: s.sc.LogPath, StartTimeout: s.cfg.startTimeout()}
	proc, err := replayer.StartBuild(ctx, b, s.wiring)
	if err != nil {
		return s.wrap(err)
	}
	s.build, s.target = proc, proc.URL()
	s.cpu = &buildCPU{pid: proc.Pid()}
	return nil
}

// open makes the side's replayer and creates its run file with the
// session's settings and its own; vus raises the cap of requests in flight.
func (s *Side) open(vus int, settings map[string]string) error {
	c := s.cfg
	cfg := replayer.Config{
		Target:      s.target,
		Exchanges:   c.Inbound,
		Source:      c.Source,
		Endpoints:   c.Endpoints,
		Header:      s.sc.Header,
		Timeout:     c.Timeout,
		MaxInFlight: max(c.maxInFlight(), vus),
		Conns:       c.Conns,
		SQLTraced:   c.SQLTraced,

		AllowTruncated: c.AllowTruncated,
		Shard:          c.shard,
		State:          c.State,
	}
	if s.sql != nil {
		cfg.SQL = s.sql
	}
	if s.mock != nil {
		cfg.Upstream = s.mock
	}
	responses := &runResponses{}
	c.Responses.apply(&cfg, responses, c.Snapshot)
	protoset := ""
	if c.Responses.Reflect && !c.Responses.Off {
		dec, path, err := reflectSchema(context.Background(), s.target, s.sc.RunPath)
		if err != nil {
			return s.wrap(fmt.Errorf("--proto-reflect: %w", err))
		}
		cfg.Messages, protoset = dec, path
	}
	rp, err := replayer.New(cfg)
	if err != nil {
		return s.wrap(err)
	}
	s.rp = rp
	s.info = snapshots.RunInfo{Name: s.sc.Name, Snapshot: c.Snapshot, Target: s.target, Started: time.Now(), Settings: s.settings(settings),
		Truncated: rp.Truncated()}
	if protoset != "" {
		if s.info.Settings == nil {
			s.info.Settings = map[string]string{}
		}
		s.info.Settings[SettingProto] = protoset
		delete(s.info.Settings, SettingProtoPath)
	}
	if s.sql != nil {
		// Kept from the start, so that the summary keeps every request's span.
		s.info.UnattributedSQL = snapshots.SQLHistogram{Bin: snapshots.DefaultSQLBin}
	}
	if s.run, err = snapshots.CreateRun(s.sc.RunPath, s.info); err != nil {
		return err
	}
	responses.w = s.run
	return nil
}

// measure is called as a load call starts and returns the function to
// call as it ends: the SQL counter's statements in between are the load's
// (RunInfo.LoadSQL), and so is the build's CPU time (RunInfo.BuildCPU) when
// replay started it.
func (s *Side) measure() func() {
	endSQL, endCPU := func() {}, func() {}
	if s.sql != nil {
		endSQL = s.load.measure(s.sql)
	}
	if s.cpu != nil {
		endCPU = s.cpu.measure()
	}
	return func() {
		endCPU()
		endSQL()
	}
}

// explainWeights records in the run file how many requests of the
// sequence each explain request stands for.
func (s *Side) explainWeights(explain int) {
	if explain > 0 && s.rp != nil {
		s.info.ExplainWeights = s.rp.ExplainWeights(explain)
	}
}

// finish stops the build and closes the run file with what the side
// measured: its load's stats, mock misses and statements, and how its
// build ended when it did.
func (s *Side) finish(st replayer.Stats) error {
	s.noteExit(0)
	s.recordExit()
	if s.build != nil {
		if err := s.build.Stop(); err != nil && s.cfg.Warn != nil {
			s.cfg.Warn(fmt.Errorf("%s: %w", s.sc.Name, err))
		}
	}
	s.info.Ended = time.Now()
	s.info.MockMisses = s.MockMisses()
	if s.sql != nil {
		st := s.sql.Stats()
		s.info.Statements, s.info.StatementErrors = st.Statements, st.Errors
		s.info.UnattributedSQL = s.sql.Unattributed()
		s.info.LoadSQL = s.load.result()
	}
	s.info.Wiring = s.wiringFacts()
	s.recordCPU()
	if s.rp != nil {
		s.info.State = s.rp.State()
	}
	stallSettings(s.info.Settings, st)
	s.writeHashes()
	w := s.run
	s.run = nil
	return w.Close(s.info)
}

// releaseReplayer closes the side's replayer and lets go of it (and of
// the requests it read) once its last load is done and its results are
// in the run file.
func (s *Side) releaseReplayer() {
	if s.rp != nil {
		s.rp.Close()
		s.rp = nil
	}
}

// Close stops whatever the side still runs: its build, replayer, mock and
// SQL counter, and closes a run file left open by an error.
func (s *Side) Close() {
	if s.run != nil {
		s.run.Close(s.info)
		s.run = nil
	}
	if s.build != nil {
		s.build.Stop()
	}
	if s.rp != nil {
		s.rp.Close()
	}
	if s.mockSrv != nil {
		s.mockSrv.Close()
	}
	if s.mock != nil {
		s.mock.Close()
	}
	if s.sqlStop != nil {
		s.sqlStop()
		for _, d := range s.sqlDone {
			<-d
		}
		s.sqlStop = nil
	}
}

// startSides makes every side listen, tells Config.Listening, then starts
// (or waits for) every build. The sides are to be closed whatever it
// returns. Errors of listening are prefixed with op, those of a build come
// as they are: they name the build.
func startSides(ctx context.Context, op string, sides []*Side) error {
	for _, s := range sides {
		if err := s.listen(ctx); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	for _, s := range sides {
		if s.cfg.Listening != nil {
			s.cfg.Listening(s)
		}
	}
	for _, s := range sides {
		if err := s.start(ctx); err != nil {
			if s.paired {
				return fmt.Errorf("%s: %w", op, err)
			}
			return err
		}
	}
	return nil
}

// noteExit records how the side's build ended when it ended on its own,
// waiting up to wait for an end under way: a build that died refuses
// connections a moment before its command is reaped.
func (s *Side) noteExit(wait time.Duration) {
	if s.build == nil || s.exit != nil {
		return
	}
	if wait > 0 {
		select {
		case <-s.build.Exited():
		case <-time.After(wait):
		}
	}
	if how := s.build.Ended(); how != "" {
		s.exit = &analyzer.BuildExit{How: how, LastLines: s.build.LastLines(5), Log: s.sc.LogPath}
	}
}
