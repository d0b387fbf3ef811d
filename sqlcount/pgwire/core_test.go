package pgwire

import (
	"sync"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// The core's names, as the tests of this wire use them.
type (
	Proxy            = sqlcore.Proxy
	Config           = sqlcore.Config
	Stats            = sqlcore.Stats
	FingerprintStats = sqlcore.FingerprintStats
	ClientStats      = sqlcore.ClientStats
)

// New returns a PostgreSQL proxy.
func New(cfg Config) (*Proxy, error) { return sqlcore.New(cfg, Wire{}) }

// newProxy returns a PostgreSQL proxy without checking its upstream.
func newProxy(cfg Config) *Proxy { return sqlcore.NewUnchecked(cfg, Wire{}) }

var (
	sessionsMu sync.Mutex
	sessions   = map[*session]*Proxy{}
)

// sessionOf returns a session of p (connection 1) that is never served, to
// feed streams to directly.
func sessionOf(p *Proxy) *session {
	s := newSession(p.Recorder(1))
	sessionsMu.Lock()
	sessions[s] = p
	sessionsMu.Unlock()
	return s
}

// statsOf returns the totals of the proxy of a session made by sessionOf.
func statsOf(s *session) Stats {
	sessionsMu.Lock()
	p := sessions[s]
	sessionsMu.Unlock()
	return p.Stats()
}
