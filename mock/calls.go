package mock

import (
	"net/http"
	"time"

	"github.com/replaykit/replay/internal/inflight"
	"github.com/replaykit/replay/snapshots"
)

// callTracker attributes the calls to mocked services to the replayed
// requests in flight, as the SQL counter attributes statements (package
// inflight): by the traceparent the app passed on from the request it
// serves, else to the one request in flight from the call's arrival to its
// answer.
type callTracker = inflight.Tracker[[]snapshots.UpstreamCount, snapshots.UpstreamCount]

func newCallTracker() *callTracker { return inflight.New(addCall) }

func addCall(counts *[]snapshots.UpstreamCount, c snapshots.UpstreamCount) {
	*counts = snapshots.AddUpstream(*counts, c)
}

// upstreamCall is a call to a mocked service being answered.
type upstreamCall struct {
	start time.Time
	win   *inflight.Window[[]snapshots.UpstreamCount]
	trace string
}

// startCall notes a call's arrival.
func (s *Server) startCall(r *http.Request) upstreamCall {
	return upstreamCall{start: time.Now(), win: s.calls.Window(), trace: inflight.TraceID(r.Header.Get("Traceparent"))}
}

// endCall attributes a call about to be answered (before the answer is
// written, so the app cannot have ended its request yet). miss says the
// recording had no answer for it.
func (s *Server) endCall(c upstreamCall, scheme, service, endpoint string, miss bool) {
	u := snapshots.UpstreamCount{Service: snapshots.UpstreamService(service, scheme), Endpoint: endpoint, Count: 1, Duration: time.Since(c.start)}
	if miss {
		u.Misses = 1
	}
	s.calls.Attribute(c.trace, c.win, u)
}

// Begin tells the mock that the replayed request id is in flight; traceID
// is the W3C trace id it carries (32 hex digits), or "". The calls that
// arrive until End are attributed to it when they carry its traceparent, or
// when it is the only request in flight for the whole call.
func (s *Server) Begin(id int64, traceID string) { s.calls.Begin(id, traceID) }

// End tells the mock that the request id has ended and returns the calls
// attributed to it, per service and endpoint. complete reports that every
// call answered while it was in flight was attributed to a request, so that
// none of its own can have been missed (a load with overlapping requests to
// an app that does not pass the traceparent on leaves it false).
func (s *Server) End(id int64) (calls []snapshots.UpstreamCount, complete bool) {
	return s.calls.End(id)
}
