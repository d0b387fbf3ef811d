package replayer

import (
	"fmt"
	"net/http"
	"time"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/snapshots"
)

// A gRPC call is replayed as recorded: its client messages framed
// (5-byte prefixes, each compressed when it was, with the recorded
// grpc-encoding), its headers (grpc-timeout among them) and traceparent as
// metadata; the server's messages are read to the end and its trailers
// give the status. The call succeeds when its grpc-status is the recorded
// one. As a gRPC client does, the replay ends a call at its deadline
// (grpc-timeout as recorded: DEADLINE_EXCEEDED) and cancels one the
// recording client canceled, that long after its start (CANCELLED).

// grpcTemplate is what replaying a recorded gRPC call needs beyond its
// HTTP/2 request.
type grpcTemplate struct {
	// recorded is the recorded grpc-status; snapshots.NoGRPCStatus when the
	// recording has none.
	recorded int
	// timeout is the call's grpc-timeout as recorded; zero when it had
	// none.
	timeout time.Duration
	// cancelAfter, when positive, is when the recording client canceled
	// the call, from its start.
	cancelAfter time.Duration
	// open keeps the request stream open after its messages, until the
	// call ends: the recording client had not closed it when its cancel or
	// its deadline ended the call (and a server that sees a stream closed
	// may well answer before either).
	open bool
}

// newGRPCTemplate returns what replaying e needs, and the request body:
// e's client messages framed as recorded.
func newGRPCTemplate(e *snapshots.Exchange) (*grpcTemplate, []byte, error) {
	g := &grpcTemplate{recorded: snapshots.NoGRPCStatus}
	code, _, ok := e.GRPCStatus()
	switch {
	case ok:
		g.recorded = code
	case e.Error != "":
		// No status, the call cut: the recording client gave up on it
		// (a cancel, a deadline), as a gRPC client reports it.
		g.recorded = 1 // CANCELLED
	}
	if v := e.RequestHeader.Get("Grpc-Timeout"); v != "" {
		if d, err := grpcwire.ParseTimeout(v); err == nil {
			g.timeout = d
		}
	}
	if g.recorded == 1 {
		g.cancelAfter = max(e.Duration, time.Microsecond)
		if g.timeout > 0 && g.timeout <= g.cancelAfter {
			g.cancelAfter, g.recorded = 0, 4 // its deadline, not a cancel, ended it
		}
	}
	g.open = g.cancelAfter > 0 || (g.recorded == 4 && g.timeout > 0)
	enc := e.RequestHeader.Get("Grpc-Encoding")
	var body []byte
	for _, m := range e.MessagesFrom(snapshots.FromClient) {
		data := m.Data
		if m.Compressed && m.Encoding == "" {
			c, err := grpcwire.Compress(enc, m.Data)
			if err != nil {
				return nil, nil, fmt.Errorf("grpc-encoding %q: %w", enc, err)
			}
			data = c
		}
		body = grpcwire.AppendFrame(body, data, m.Compressed)
	}
	return g, body, nil
}

// deadline returns when a call sent at sent ends unanswered, and why: the
// replay's timeout (until), the call's grpc-timeout, or the recorded
// cancel, whichever comes first.
func (g *grpcTemplate) deadline(sent, until time.Time) (time.Time, error) {
	limit, cause := until.Sub(sent), errTimeout
	// Durations, not times, compared: a grpc-timeout of years would
	// overflow a time.
	if g.timeout > 0 && g.timeout < limit {
		limit, cause = g.timeout, errGRPCDeadline
	}
	if g.cancelAfter > 0 && g.cancelAfter < limit {
		limit, cause = g.cancelAfter, errClientCancel
	}
	return sent.Add(limit), cause
}

// grpcStatusOf returns the grpc-status of a call's answer read to its
// end; without one, the code gRPC's specification maps its HTTP status to
// (INTERNAL for a 200 without trailers).
func grpcStatusOf(resp *http.Response) int {
	st, ok, err := grpcwire.ParseStatus(resp.Header, resp.Trailer)
	if ok && err == nil {
		return st.Code
	}
	if ok || resp.StatusCode == http.StatusOK {
		return 13 // INTERNAL: a malformed status, or none
	}
	switch resp.StatusCode {
	case http.StatusBadRequest:
		return 13
	case http.StatusUnauthorized:
		return 16 // UNAUTHENTICATED
	case http.StatusForbidden:
		return 7 // PERMISSION_DENIED
	case http.StatusNotFound:
		return 12 // UNIMPLEMENTED
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return 14 // UNAVAILABLE
	}
	return 2 // UNKNOWN
}
