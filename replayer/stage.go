package replayer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// The stage between the plan and the wire: a request is rewritten from
// its session's live values (a fresh token, the ids and cookies of the
// answers it depends on, moved timestamps) just before it is sent. Every
// load model, the explain phase, shards and both sides of a comparison go
// through it; it is off (nil) when StateConfig asks for nothing, and then
// costs nothing.

// StateConfig configures the stage. The zero value turns it off: requests
// go out as recorded.
type StateConfig struct {
	// Tokens, when set, gives the credential every request carries where
	// the recording had a redacted one (or in TokenHeader); a request
	// answered 401 gets a fresh token and is sent again once.
	Tokens TokenSource
	// TokenHeader names the header the token goes in on every request;
	// empty: the headers whose value the recording redacted.
	TokenHeader string
	// TokenFormat makes the header's value from the token, "{token}"
	// standing for it; empty: the recorded scheme ("Bearer [REDACTED]"
	// gives "Bearer {token}"), else "Bearer {token}" for Authorization and
	// the bare token for other headers.
	TokenFormat string
	// Correlate finds the links between requests in the recording (a value
	// the server generated, sent back later by the same client) and
	// substitutes the live values; each session's requests then go out in
	// order, a dependent request waiting for its source.
	Correlate bool
	// SessionKey names the request header whose value tells recorded
	// clients apart; empty: the recorded connection does
	// (Exchange.ClientConn), and a recording that did not keep it is one
	// client.
	SessionKey string
	// ShiftTimes moves the timestamps of requests (RFC 3339, Unix seconds
	// or milliseconds in the query, a header or the JSON body) that lie
	// within the recording's time span by the replay's offset from it.
	ShiftTimes bool
}

// TokenSource gives tokens; *tokens.Cache is one.
type TokenSource interface {
	// Token returns a token valid now.
	Token(ctx context.Context) (string, error)
	// Invalidate drops token, which the target refused.
	Invalidate(token string)
}

// stage is a Replayer's state between the plan and the wire.
type stage struct {
	cfg   StateConfig
	r     *Replayer
	links *linkSet // nil: no links (or Correlate off)
	live  liveAnswers
	shift *timeShift // nil: off

	tokenRetries atomicCount // answered 401, sent again with a fresh token
	tokenErrors  atomicCount // no token could be had: sent without
	waited       atomicCount // waited for the answer a value comes from
	// Of the current load call (reset by start): the requests that waited
	// for a source's answer and the longest wait, in nanoseconds.
	callWaited, callMaxWait atomicCount
	tokenErr                whyNote
	posIndex
}

type atomicCount = atomic.Int64

// whyNote keeps the last reason of something, for the report.
type whyNote struct {
	mu  sync.Mutex
	why string
}

func (w *whyNote) set(s string) {
	w.mu.Lock()
	w.why = s
	w.mu.Unlock()
}

func (w *whyNote) get() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.why
}

// newStage returns r's stage, or nil when cfg asks for nothing.
func newStage(r *Replayer) (*stage, error) {
	cfg := r.cfg.State
	if cfg.Tokens == nil && !cfg.Correlate && !cfg.ShiftTimes {
		return nil, nil
	}
	s := &stage{cfg: cfg, r: r}
	if cfg.Correlate {
		links, err := findLinks(r.cfg, r.seq)
		if err != nil {
			return nil, err
		}
		s.links = links
	}
	if cfg.Tokens == nil && s.links == nil && !cfg.ShiftTimes {
		return nil, nil // nothing to rewrite: the fast path stays
	}
	s.live.init()
	if cfg.ShiftTimes {
		s.shift = newTimeShift(r.seq)
	}
	return s, nil
}

// start is told the cursor as a load call starts, and the time.
func (s *stage) start(cursor int64, now time.Time) {
	s.live.start(cursor)
	s.shift.start(now)
	s.callWaited.Store(0)
	s.callMaxWait.Store(0)
}

// waitedFor counts a request that waited d for the answers it depends on.
func (s *stage) waitedFor(d time.Duration) {
	s.waited.Add(1)
	s.callWaited.Add(1)
	for {
		m := s.callMaxWait.Load()
		if int64(d) <= m || s.callMaxWait.CompareAndSwap(m, int64(d)) {
			return
		}
	}
}

// callStats puts the current load call's waits for sources in st.
func (s *stage) callStats(st *Stats) {
	st.WaitedForSource = s.callWaited.Load()
	st.MaxWaitForSource = time.Duration(s.callMaxWait.Load())
}
