package snapshots

import (
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Sender says which side of a stream sent a message.
type Sender string

// The senders of a message.
const (
	// FromClient messages are the request's: what a replay sends again.
	FromClient Sender = "client"
	// FromServer messages are the response's: what a mock answers with.
	FromServer Sender = "server"
)

// Message is one length-prefixed message of a gRPC stream.
type Message struct {
	// From is FromClient or FromServer.
	From Sender
	// Offset is when the message was whole on the wire, from the exchange's
	// Start; zero when not known (an import that gave no times).
	Offset time.Duration
	// Data is the message (a serialized protobuf, usually), decompressed
	// when it was sent compressed with an encoding replay decodes (gzip);
	// at most the recorder's body cap.
	Data []byte
	// Size is the message's full length in bytes, as Data holds it (after
	// decompression); larger than len(Data) when the message was cut.
	Size int64
	// Compressed reports that the message's compressed flag was set on the
	// wire, so that a replay or a mock can send it as it was sent.
	Compressed bool
	// Encoding is the grpc-encoding Data is still compressed with, when
	// replay could not decode it; "" when Data is the plain message.
	Encoding string
}

// Truncated reports whether the recorded message is shorter than the one
// sent.
func (m *Message) Truncated() bool { return m.Size > int64(len(m.Data)) }

// messagesCut reports whether a message from s was cut.
func messagesCut(ms []Message, s Sender) bool {
	for i := range ms {
		if ms[i].From == s && ms[i].Truncated() {
			return true
		}
	}
	return false
}

// MessagesFrom returns the messages of e sent by s, in order.
func (e *Exchange) MessagesFrom(s Sender) []Message {
	var out []Message
	for _, m := range e.Messages {
		if m.From == s {
			out = append(out, m)
		}
	}
	return out
}

// IsGRPC reports whether e is a gRPC call: its request's content type is
// application/grpc, or application/grpc+proto and the like (gRPC-Web, a
// protocol of HTTP/1.1 bodies, is not).
func (e *Exchange) IsGRPC() bool { return IsGRPCContentType(e.RequestHeader.Get("Content-Type")) }

// IsGRPCContentType reports whether a content type is gRPC's
// ("application/grpc", optionally "+proto", "+json", …; not gRPC-Web).
func IsGRPCContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/grpc" || strings.HasPrefix(mt, "application/grpc+")
}

// Transport names the HTTP version e travelled on as ALPN does: "h2" (HTTP/2
// over TLS), "h2c" (HTTP/2 in the clear) or "http/1.1".
func (e *Exchange) Transport() string {
	if e.Proto != "HTTP/2.0" {
		return "http/1.1"
	}
	if e.Protocol == "https" {
		return "h2"
	}
	return "h2c"
}

// GRPCStatus returns the status a gRPC call ended with: Grpc-Status and
// Grpc-Message (percent-decoded) from the trailers, or from the headers of a
// "Trailers-Only" answer. ok is false when neither carries a valid status:
// no answer came, or it was cut before its trailers.
func (e *Exchange) GRPCStatus() (code int, message string, ok bool) {
	return GRPCStatusOf(e.ResponseHeader, e.ResponseTrailer)
}

// GRPCStatusOf returns the gRPC status that a response's trailer, else its
// header, carries (see Exchange.GRPCStatus).
func GRPCStatusOf(header, trailer http.Header) (code int, message string, ok bool) {
	for _, h := range []http.Header{trailer, header} {
		vs := h.Values("Grpc-Status")
		if len(vs) == 0 {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(vs[0]))
		if err != nil || n < 0 {
			return 0, "", false
		}
		msg := h.Get("Grpc-Message")
		if m, err := url.PathUnescape(msg); err == nil {
			msg = m
		}
		return n, msg, true
	}
	return 0, "", false
}

// grpcEndpointPrefix begins every gRPC endpoint.
const grpcEndpointPrefix = "gRPC "

// GRPCEndpoint is the endpoint of a call to a gRPC method, given as its
// path: "/route.RoutesService/FindRoute" gives
// "gRPC route.RoutesService/FindRoute".
func GRPCEndpoint(method string) string {
	return grpcEndpointPrefix + strings.TrimPrefix(method, "/")
}

// GRPCMethod is the method a gRPC endpoint names, as a path
// ("/route.RoutesService/FindRoute"), and whether endpoint is one.
func GRPCMethod(endpoint string) (string, bool) {
	rest, ok := strings.CutPrefix(endpoint, grpcEndpointPrefix)
	if !ok {
		return "", false
	}
	return "/" + rest, true
}
