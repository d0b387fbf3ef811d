package grpcwire

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Status is how a gRPC call ended: grpc-status, grpc-message and
// grpc-status-details-bin (a serialized google.rpc.Status, kept as bytes).
type Status struct {
	// Code is the status code: 0 is OK, 1 to 16 gRPC's codes (CodeName).
	Code int
	// Message is grpc-message, percent-decoded.
	Message string
	// Details is grpc-status-details-bin, base64-decoded; nil when absent.
	Details []byte
}

// codeNames are gRPC's status codes, by number.
var codeNames = []string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
	"OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// CodeName names a status code as gRPC does ("NOT_FOUND"); an unknown
// code is "CODE(42)".
func CodeName(code int) string {
	if code >= 0 && code < len(codeNames) {
		return codeNames[code]
	}
	return "CODE(" + strconv.Itoa(code) + ")"
}

// String is "NOT_FOUND: no route", or the code's name alone.
func (s Status) String() string {
	if s.Message == "" {
		return CodeName(s.Code)
	}
	return CodeName(s.Code) + ": " + s.Message
}

// ParseStatus reads the status of a call from its trailer, else from its
// header (a "Trailers-Only" answer). ok is false when neither holds a
// grpc-status; err tells a malformed one.
func ParseStatus(header, trailer http.Header) (s Status, ok bool, err error) {
	h := trailer
	if len(h.Values("Grpc-Status")) == 0 {
		h = header
	}
	vs := h.Values("Grpc-Status")
	if len(vs) == 0 {
		return Status{}, false, nil
	}
	code, err := strconv.Atoi(strings.TrimSpace(vs[0]))
	if err != nil || code < 0 {
		return Status{}, false, fmt.Errorf("bad grpc-status %q", vs[0])
	}
	s = Status{Code: code, Message: DecodeMessage(h.Get("Grpc-Message"))}
	if d := h.Get("Grpc-Status-Details-Bin"); d != "" {
		if s.Details, err = decodeBin(d); err != nil {
			return s, true, fmt.Errorf("bad grpc-status-details-bin: %w", err)
		}
	}
	return s, true, nil
}

// Trailer returns the status as trailers carry it.
func (s Status) Trailer() http.Header {
	h := http.Header{"Grpc-Status": {strconv.Itoa(s.Code)}}
	if s.Message != "" {
		h.Set("Grpc-Message", EncodeMessage(s.Message))
	}
	if s.Details != nil {
		h.Set("Grpc-Status-Details-Bin", base64.RawStdEncoding.EncodeToString(s.Details))
	}
	return h
}

// EncodeMessage percent-encodes a grpc-message: bytes outside printable
// ASCII, and '%', become %XX.
func EncodeMessage(m string) string {
	var b strings.Builder
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c < 0x20 || c > 0x7e || c == '%' {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// DecodeMessage reverses EncodeMessage; a '%' not followed by two hex
// digits is kept as it is, as gRPC's implementations do.
func DecodeMessage(m string) string {
	if !strings.Contains(m, "%") {
		return m
	}
	var b strings.Builder
	for i := 0; i < len(m); i++ {
		if m[i] == '%' && i+2 < len(m) {
			if v, err := strconv.ParseUint(m[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(m[i])
	}
	return b.String()
}

// decodeBin decodes a -bin metadata value: base64, padded or not.
func decodeBin(v string) ([]byte, error) {
	v = strings.TrimRight(v, "=")
	return base64.RawStdEncoding.DecodeString(v)
}

// DecodeBin decodes a binary metadata value (a header whose name ends in
// "-bin"): base64, padded or not.
func DecodeBin(v string) ([]byte, error) { return decodeBin(v) }
