package session

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/replaykit/replay/internal/ca"
	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/shard"
	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount"
)

// Defaults, as `replay compare` and `replay run` take them.
const (
	// DefaultStartTimeout is how long a build is waited for when
	// Config.StartTimeout is zero.
	DefaultStartTimeout = 60 * time.Second
	// DefaultVUs, DefaultDuration and DefaultWarmup are a comparison's
	// closed-model load per side.
	DefaultVUs      = 4
	DefaultDuration = 20 * time.Second
	DefaultWarmup   = time.Second
	// DefaultExplain is the explain phase's cap of distinct request shapes
	// per endpoint when SQL is counted (see replayer.Explain).
	DefaultExplain = 10
)

// Config is what every side of a session shares.
type Config struct {
	// Snapshot is the snapshot's path, as run files record it.
	Snapshot string
	// Inbound are the recorded inbound requests to replay; required unless
	// Source is set.
	Inbound []*snapshots.Exchange
	// Source, when set, gives the requests to replay instead of Inbound,
	// read from the snapshot as the load needs them, one Source for every
	// side (OpenRecording makes it); it selected the Endpoints already.
	Source *replayer.Source
	// Endpoints, when set, replay only the matching endpoints (see
	// replayer.Config.Endpoints).
	Endpoints []string
	// Timeout bounds each request; zero means replayer.DefaultTimeout.
	Timeout time.Duration
	// MaxInFlight caps each side's requests in flight; zero means
	// replayer.DefaultMaxInFlight. It is raised to the plan's virtual users.
	MaxInFlight int
	// Conns is the number of HTTP/2 connections per side that the requests
	// recorded over HTTP/2 share; zero means replayer.DefaultConns.
	Conns int
	// SQLTraced says the builds put each request's traceparent in their SQL
	// comments, so SQL is attributed under load too.
	SQLTraced bool
	// StartTimeout bounds the wait for each build to answer; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Env holds KEY=VALUE entries for every side's build command, under
	// the side's own SideConfig.Env.
	Env []string
	// AllowTruncated replays recorded requests whose body was cut at
	// recording, counted per endpoint in the run files; when false, Run
	// and Compare refuse them before anything starts, with a
	// *replayer.TruncatedError. (Mock.AllowTruncated is the same for the
	// mock's recorded responses.)
	AllowTruncated bool

	// Responses says how each side keeps its build's answers in its run
	// file (the zero value: a sample per endpoint and hashes).
	Responses ResponseCapture

	// Mock, when set, mocks the upstreams of each side with its own
	// mock.Server made from it (its CA is replay's, from CADir); nil mocks
	// nothing.
	Mock *mock.Config
	// CADir is the directory of replay's CA, which intercepts HTTPS to
	// mocked upstreams and which the builds trust (created when missing);
	// empty means the default, $XDG_CONFIG_HOME/replay/ca.
	CADir string
	// Postgres, when set, puts a SQL counter in front of PostgreSQL on
	// each side; nil counts no SQL.
	Postgres *Postgres
	// MySQL, when set, puts a SQL counter in front of MySQL or MariaDB on
	// each side, as Postgres does; with both, a side's requests count the
	// statements of both.
	MySQL *Database

	// Settings are recorded in every side's run file (report.Setting…
	// keys and others); each side adds its own ("side", "cmd", "env",
	// "headers", and how far it fell behind an open model).
	Settings map[string]string
	// Listening, when set, is told each side once its mock and SQL
	// counter listen, before any build is started or waited for: a CLI
	// tells the user how to start a build given as a URL.
	Listening func(*Side)
	// Warn, when set, is told what went wrong without stopping the
	// session, e.g. a build that did not stop cleanly.
	Warn func(error)
	// Limits bound the connections of each side's mock and SQL counter
	// (the zero Limits: the defaults); a listen address without a host is
	// loopback.
	Limits listen.Limits
	// Observer, when set, watches the session as it goes (a live
	// dashboard); nil costs nothing.
	Observer Observer
	// State is the replayers' stage between the plan and the wire: token
	// source, correlation, moved timestamps. Both sides of a comparison
	// share its token source and keep their own correlated values.
	State replayer.StateConfig

	// Shard, when set, runs shard Shard.Spec of the plan (replayer.Shard):
	// the run files carry the shard's tags (shard.Spec.Tags, the plan's
	// hash over the shared settings) and, when Shard.Addr is set, the load
	// starts at the barrier's T0. Nil runs the whole plan.
	Shard *shard.Barrier
	// Local, when set, runs the plan as Local's shard processes here
	// (--shards N --local) instead: Run and Compare merge their run files
	// into the side's RunPath (Dir/baseline.run, Dir/candidate.run) and
	// report on the merge; the shards' files go to RunPath.shards/
	// (Dir/shards/).
	Local *shard.Local

	authority *ca.CA         // loaded from CADir by check, with Mock
	shard     replayer.Shard // from Shard, by shardSettings
}

// Postgres is the SQL counter of each side in front of PostgreSQL.
type Postgres = Database

// Database is the SQL counter of each side, in front of one real database
// server.
type Database struct {
	// Protocol is the server's wire protocol (sqlcount.Protocols); empty
	// for the one its field of Config names.
	Protocol string
	// Upstream is the server's HOST:PORT; required.
	Upstream string
	// ClientTLS, when set, is offered to the builds' connections (apps that
	// insist on sslmode=require); nil speaks in the clear.
	ClientTLS *tls.Config
	// UpstreamTLS, when set, encrypts every connection to the server; nil
	// speaks in the clear.
	UpstreamTLS *tls.Config
	// Listen is an address the builds' environment may name for the
	// counter out of habit: LISTEN of `--postgres LISTEN=HOST:PORT`, where
	// `record` had the app connect. Each side's build has it rewritten to
	// its own counter's address, like Upstream (replayer.Wiring.Listen), so
	// that both sides do not share one counter. Empty: none.
	Listen string
}

// SideConfig is one side: the build and what is particular to it.
type SideConfig struct {
	// Name labels the side in run files, errors and progress, e.g.
	// "baseline"; required.
	Name string
	// URL is the base URL of a build the user runs; Cmd a command replay
	// starts (/bin/sh -c, listening on $PORT) and stops. Exactly one.
	URL, Cmd string
	// CmdShown is Cmd as run files and reports name the build, e.g.
	// "replay demo orders" for a Cmd that runs the replay binary by its
	// absolute path; empty: Cmd.
	CmdShown string
	// Env holds KEY=VALUE entries for Cmd, over Config.Env.
	Env []string
	// Header is added to (or replaces in) every request of the side.
	Header http.Header
	// RunPath is the run file to create (it must not exist); Compare
	// fills it from its Dir when empty.
	RunPath string
	// LogPath receives a Cmd build's output; empty means RunPath +
	// ".build.log" (Run) or DIR/NAME.log (Compare).
	LogPath string
	// MockListen is where the side's mock listens; empty means
	// 127.0.0.1:0.
	MockListen string
	// PostgresListen is where the side's SQL counter in front of
	// PostgreSQL listens, MySQLListen the one in front of MySQL; empty means
	// 127.0.0.1:0.
	PostgresListen string
	MySQLListen    string
}

// check reports a config that cannot run.
func (c *Config) check() error {
	switch {
	case len(c.Inbound) == 0 && c.Source == nil:
		return fmt.Errorf("%s holds no inbound requests to replay", c.Snapshot)
	case c.Postgres != nil && c.Postgres.Upstream == "":
		return errors.New("counting SQL needs the PostgreSQL server's address (Postgres.Upstream)")
	case c.MySQL != nil && c.MySQL.Upstream == "":
		return errors.New("counting SQL needs the MySQL server's address (MySQL.Upstream)")
	}
	if !c.AllowTruncated {
		cut, err := replayer.Truncated(c.Inbound, c.Endpoints)
		if c.Source != nil {
			cut = c.Source.Truncated()
		}
		if err != nil {
			return err
		}
		if cut != nil {
			return fmt.Errorf("%s: %w", c.Snapshot, &replayer.TruncatedError{Endpoints: cut})
		}
	}
	if c.Mock != nil && c.Mock.Index == nil {
		// One index for every side's mock: the recorded calls once.
		idx, err := mock.NewIndex(context.Background(), *c.Mock)
		if err != nil {
			return err
		}
		m := *c.Mock
		m.Index, c.Mock = idx, &m
	}
	if c.Mock != nil && c.authority == nil {
		a, err := ca.LoadOrCreate(c.CADir)
		if err != nil {
			return err
		}
		c.authority = a
	}
	return nil
}

func (sc *SideConfig) check() error {
	switch {
	case sc.Name == "":
		return errors.New("a side needs a name")
	case (sc.URL == "") == (sc.Cmd == ""):
		return fmt.Errorf("%s: give the build as a URL or as a command, one of the two", sc.Name)
	case sc.RunPath == "":
		return fmt.Errorf("%s: no run file to write", sc.Name)
	}
	return nil
}

func (c *Config) startTimeout() time.Duration {
	if c.StartTimeout > 0 {
		return c.StartTimeout
	}
	return DefaultStartTimeout
}

func (c *Config) maxInFlight() int {
	if c.MaxInFlight > 0 {
		return c.MaxInFlight
	}
	return replayer.DefaultMaxInFlight
}

func orLoopback(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}

// database is one SQL counter of a side: the server, and where the side's
// counter listens.
type database struct {
	*Database
	protocol string
	listen   string
}

// databases returns the SQL counters of side sc: PostgreSQL's, then
// MySQL's.
func (c *Config) databases(sc SideConfig) []database {
	var out []database
	if c.Postgres != nil {
		out = append(out, database{c.Postgres, or(c.Postgres.Protocol, sqlcount.Postgres), sc.PostgresListen})
	}
	if c.MySQL != nil {
		out = append(out, database{c.MySQL, or(c.MySQL.Protocol, sqlcount.MySQL), sc.MySQLListen})
	}
	return out
}
