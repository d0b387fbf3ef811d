package recorder

import (
	"strings"
	"sync"

	"github.com/replaykit/replay/snapshots"
)

// Sink receives recorded exchanges; *snapshots.Writer is one.
type Sink interface {
	// NewID reserves the ID of an exchange that has just started.
	NewID() int64
	// AddExchange records a completed exchange.
	AddExchange(e *snapshots.Exchange)
	// CountSeen counts a request seen, recorded or not.
	CountSeen(d snapshots.Direction)
}

var _ Sink = (*snapshots.Writer)(nil)

// RequestTracker is told when inbound requests start and end, so that work
// they cause elsewhere (SQL statements) can be attributed to them;
// *sqlcount.Proxy is one.
type RequestTracker interface {
	Begin(id int64, traceID string)
	End(id int64) []snapshots.SQLCount
}

// Redacted replaces a secret in a recorded exchange.
const Redacted = snapshots.Redacted

// DefaultBodyLimit is the number of body bytes recorded per message when no
// limit is configured: 1 MiB.
const DefaultBodyLimit = 1 << 20

// TraceID returns the trace id of a W3C traceparent header value
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"), or "" when the
// value is not one.
func TraceID(traceparent string) string {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return ""
	}
	if !isHex(parts[1]) || strings.Trim(parts[1], "0") == "" {
		return ""
	}
	return strings.ToLower(parts[1])
}

func isHex(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Inflight tracks the inbound requests in flight, so that an outbound call
// can be linked to the inbound request it belongs to. Safe for concurrent use.
type Inflight struct {
	mu      sync.Mutex
	byID    map[int64]string
	byTrace map[string]int64
}

// NewInflight returns an empty registry.
func NewInflight() *Inflight {
	return &Inflight{byID: map[int64]string{}, byTrace: map[string]int64{}}
}

// Begin registers inbound request id, with its trace id ("" when none).
func (f *Inflight) Begin(id int64, traceID string) {
	f.mu.Lock()
	f.byID[id] = traceID
	if traceID != "" {
		f.byTrace[traceID] = id
	}
	f.mu.Unlock()
}

// End removes inbound request id.
func (f *Inflight) End(id int64) {
	f.mu.Lock()
	if t, ok := f.byID[id]; ok {
		delete(f.byID, id)
		if t != "" && f.byTrace[t] == id {
			delete(f.byTrace, t)
		}
	}
	f.mu.Unlock()
}

// Parent returns the inbound request an outbound call belongs to: the one
// with the same trace id, else the only one in flight, else 0.
func (f *Inflight) Parent(traceID string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if traceID != "" {
		if id, ok := f.byTrace[traceID]; ok {
			return id
		}
	}
	if len(f.byID) == 1 {
		for id := range f.byID {
			return id
		}
	}
	return 0
}

// Len returns the number of requests in flight.
func (f *Inflight) Len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byID)
}
