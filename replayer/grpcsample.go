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
	st := grpcwire.Stream{From: snapshots.FromServer, Encoding: g.encoding, Keep: tp.keep, Budget: int64(tp.keep)}
	st.Write(tp.buf)
	st.Close()
	method, _ := snapshots.GRPCMethod(t.endpoint)
	body, err := grpcDoc(r.cfg.Messages, method, st.Messages(), g.code, g.message, t.h2.grpc.open)
	if err != nil {
		return s
	}
	s.Body, s.BodySize, s.Truncated = body, int64(len(body)), tp.n > int64(len(tp.buf)) || st.Err() != nil
	return s
}

// keepMessages lets a sampled gRPC answer keep up to rawFactor times the
// sample's limit of its stream, so that its messages decode whole (the
// recording keeps them whole too).
func (tp *bodyTap) keepMessages() {
	if tp != nil && tp.sample {
		tp.keep = tp.limit * rawFactor
	}
}

// grpcDoc is the JSON document a gRPC answer is compared as: its server
// messages decoded by dec (nil: by field number), its status and message;
// the status alone when statusOnly (a call the recording client ended
// itself: what came before the end is a matter of timing, on both sides).
func grpcDoc(dec MessageDecoder, method string, ms []snapshots.Message, code int, message string, statusOnly bool) ([]byte, error) {
	if dec == nil {
		dec = &pbdecode.Decoder{}
	}
	doc := map[string]any{"status": grpcwire.CodeName(code)}
	if !statusOnly {
		doc["messages"] = dec.Messages(method, snapshots.FromServer, ms)
		doc["message"] = message
	}
	return json.Marshal(doc)
}

// GRPCAnswer returns a recorded gRPC call with its answer as the JSON
// document that replayed answers are compared as (see Config.Messages) in
// its ResponseBody, for a response differ to compare the recording with a
// build's answers; any other exchange as it is.
func GRPCAnswer(e *snapshots.Exchange, dec MessageDecoder) *snapshots.Exchange {
	if !e.IsGRPC() {
		return e
	}
	g, _, err := newGRPCTemplate(e)
	if err != nil {
		return e
	}
	_, message, _ := e.GRPCStatus()
	method, _ := snapshots.GRPCMethod(templateEndpoint(e))
	body, err := grpcDoc(dec, method, e.MessagesFrom(snapshots.FromServer), g.recorded, message, g.open)
	if err != nil {
		return e
	}
	c := *e
	c.ResponseBody, c.ResponseBodySize = body, int64(len(body))
	if e.ResponseTruncated() {
		c.ResponseBodySize++ // a message was cut: so is the document
	}
	c.Messages = nil
	return &c
}
