package session

import (
	"context"
	"os"
	"strings"

	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/snapshots"
)

// wiringFacts is what the side's mock and SQL counter saw of the builds,
// for its run file: the analyzer tells from them a build that did not use
// them (analyzer.RunFaults, analyzer.CompareFaults).
func (s *Side) wiringFacts() *snapshots.Wiring {
	w := &snapshots.Wiring{}
	if s.sql != nil {
		st := s.sql.Stats()
		w.SQLAddr, w.SQLApp, w.SQLConnections = s.sqlAddr, s.givenApp(), st.Connections
		w.SQLUpstreamErrors = st.UpstreamErrors
		for _, c := range st.Clients {
			w.SQLClients = append(w.SQLClients, snapshots.SQLClient{App: c.App, Connections: c.Connections, Statements: c.Statements})
		}
	}
	if s.mock != nil {
		st := s.mock.Stats()
		w.MockAddr = s.mockAddr
		w.MockCalls = st.Exact + st.Loose + st.Template + st.Misses
		w.RecordedCalls = s.recordedCalls()
		w.MockPassthroughErrors = st.PassthroughErrors
		w.MockTruncated, w.MockTruncatedServed = st.Truncated, st.Truncated > 0 && s.cfg.Mock.AllowTruncated
	}
	return w
}

// givenApp is the application_name the side's build was given or told to
// use (PGAPPNAME, see WriteStartHint); "" when its own environment names
// one, or the side is alone.
func (s *Side) givenApp() string {
	var r replayer.DatabaseRoute
	for _, d := range s.wiring.Databases {
		if d.Counter == s.sqlAddr {
			r = d
		}
	}
	if r.App == "" || s.sc.Cmd == "" {
		return r.App
	}
	for _, env := range [][]string{os.Environ(), s.cfg.Env, s.sc.Env} {
		for _, kv := range env {
			if k, v, _ := strings.Cut(kv, "="); k == r.Protocol.AppVar && v != "" {
				return ""
			}
		}
	}
	return r.App
}

// recordedCalls counts the recorded outbound calls to mocked services that
// belong to the inbound requests the side replays: a build that makes the
// same calls sends some to its mock.
func (s *Side) recordedCalls() int64 {
	if s.rp == nil || s.mock == nil || s.cfg.Mock == nil {
		return 0
	}
	// A snapshot that cannot be read now counts what it could: the
	// wiring check then errs towards naming a fault.
	n, _ := s.mock.RecordedCalls(context.Background(), s.rp.Replays)
	return n
}
