package mock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/pbdecode"
	"github.com/replaykit/replay/snapshots"
)

// A gRPC call is matched as a POST to its method whose body is the JSON
// array of its client messages, decoded (pbdecode: by field number, or by
// name with a schema), so that the JSON machinery (canonical at the exact
// level, volatile values masked at the loose one) applies to protobuf as
// it does to JSON. A bidirectional call whose recording interleaves the
// two sides (the server answered before the client had sent everything) is
// matched on its first client message, the one it has when it must answer.

// isGRPC reports whether a live request is a gRPC call.
func isGRPC(r *http.Request) bool {
	return snapshots.IsGRPCContentType(r.Header.Get("Content-Type"))
}

// interleaved reports whether e's server spoke before its client's last
// message.
func interleaved(e *snapshots.Exchange) bool {
	lastClient := -1
	firstServer := len(e.Messages)
	for i, m := range e.Messages {
		if m.From == snapshots.FromClient {
			lastClient = i
		} else if i < firstServer {
			firstServer = i
		}
	}
	return firstServer < lastClient
}

// grpcBody is the body a gRPC call is matched on: its client messages (the
// first only when first is set) decoded into one JSON array.
func grpcBody(dec *pbdecode.Decoder, method string, msgs []snapshots.Message, first bool) []byte {
	var client []snapshots.Message
	for _, m := range msgs {
		if m.From == snapshots.FromClient {
			client = append(client, m)
			if first {
				break
			}
		}
	}
	b, err := json.Marshal(dec.Messages(method, snapshots.FromClient, client))
	if err != nil {
		return nil
	}
	return b
}

// grpcRequest reduces a gRPC call to what matching looks at.
func grpcRequest(scheme, service string, target *url.URL, body []byte) request {
	q := newRequest(http.MethodPost, scheme, service, target, "application/json", body)
	q.endpoint = snapshots.GRPCEndpoint(q.path)
	return q
}

// readCall reads a live call's client messages for matching: the first
// only for a route whose recordings interleave, else all of them up to the
// client's end. It returns the messages, whether the client has ended, and
// the frames read as they were sent (for a passthrough to send them on).
func readCall(r *http.Request, firstOnly bool) (msgs []snapshots.Message, ended bool, raw []byte, err error) {
	enc := r.Header.Get("Grpc-Encoding")
	var total int64
	for {
		if firstOnly && len(msgs) == 1 {
			return msgs, false, raw, nil
		}
		f, err := grpcwire.ReadFrame(r.Body, maxRequestBody)
		if errors.Is(err, io.EOF) {
			return msgs, true, raw, nil
		}
		if err != nil {
			return nil, false, nil, fmt.Errorf("read gRPC message: %w", err)
		}
		total += int64(len(f.Data))
		if total > maxRequestBody {
			return nil, false, nil, fmt.Errorf("gRPC request larger than %d bytes", maxRequestBody)
		}
		raw = grpcwire.AppendFrame(raw, f.Data, f.Compressed)
		m := snapshots.Message{From: snapshots.FromClient, Data: f.Data, Size: int64(len(f.Data)), Compressed: f.Compressed}
		if f.Compressed {
			data, size, err := grpcwire.Decompress(enc, f.Data, 0)
			if err != nil {
				return nil, false, nil, fmt.Errorf("decompress gRPC message: %w", err)
			}
			m.Data, m.Size = data, size
		}
		msgs = append(msgs, m)
	}
}

// grpcError is a made-up answer to a gRPC call, as gRPC sends an error: a
// "Trailers-Only" response with grpc-status, marked with MarkerHeader.
func grpcError(code int, marker, msg string) *http.Response {
	h := grpcwire.Status{Code: code, Message: msg}.Trailer()
	h.Set("Content-Type", "application/grpc")
	h.Set(MarkerHeader, marker)
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/2.0", ProtoMajor: 2,
		Header: h, Body: http.NoBody}
}
