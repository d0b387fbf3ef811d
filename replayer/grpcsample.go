package replayer

import (
	"encoding/json"
	"net/http"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/pbdecode"
	"github.com/replaykit/replay/snapshots"
)

// MessageDecoder decodes one side of a gRPC call's messages into JSON-like
// trees, by field number or with names from a schema; *pbdecode.Decoder is
// one.
type MessageDecoder interface {
	Messages(method string, from snapshots.Sender, ms []snapshots.Message) []any
}

var _ MessageDecoder = (*pbdecode.Decoder)(nil)

// grpcAnswer is what a sampled gRPC answer's tap keeps beyond its body
// bytes: how its messages are compressed, and its status.
type grpcAnswer struct {
	encoding string // the response's grpc-encoding
	code     int
	message  string // grpc-message, decoded
}

// noteGRPC notes a sampled gRPC answer's encoding and status (resp nil:
// none came).
func (tp *bodyTap) noteGRPC(resp *http.Response, code int) {
	if tp == nil || !tp.sample {
		return
	}
	g := &grpcAnswer{code: code}
	if resp != nil { // nil: the call ended at its deadline or cancel before an answer
		st, _, _ := grpcwire.ParseStatus(resp.Header, resp.Trailer)
		g.encoding, g.message = resp.Header.Get("Grpc-Encoding"), st.Message
	}
	tp.grpc = g
}

// grpcSample is the sample of a gRPC answer: its server messages decoded
// from protobuf (by field number, or with names from Config.Messages) and
// its status, as one JSON document, so that answers are compared as JSON
// ones are, noise cancelled alike:
//
//	{"messages": [{"1": "Lisbon", "3": 313000}], "status": "OK", "message": ""}
func (r *Replayer) grpcSample(tp *bodyTap, t *template, res *snapshots.Result) *snapshots.ResponseSample {
	s := tp.responseSample(t, res)
	g := tp.grpc
	if g == nil {
		return s
	}
	st := grpcwire.Stream{From: snapshots.FromServer, Encoding: g.encoding, Keep: tp.limit, Budget: int64(tp.limit)}
	st.Write(tp.buf)
	st.Close()
	var dec MessageDecoder = &pbdecode.Decoder{}
	if r.cfg.Messages != nil {
		dec = r.cfg.Messages
	}
	method, _ := snapshots.GRPCMethod(t.endpoint)
	doc := map[string]any{"status": grpcwire.CodeName(g.code)}
	if !t.h2.grpc.open {
		doc["messages"] = dec.Messages(method, snapshots.FromServer, st.Messages())
		doc["message"] = g.message
	}
	// A call the recording client ended itself (a cancel, its deadline) is
	// compared by status alone: what came before the end is a matter of
	// timing, on both sides.
	body, err := json.Marshal(doc)
	if err != nil {
		return s
	}
	s.Body, s.BodySize, s.Truncated = body, int64(len(body)), s.Truncated || st.Err() != nil
	return s
}
