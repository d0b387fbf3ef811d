package replayer

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// bodyTap sees the body of one answer as it is read: it hashes every byte
// and, for a sampled answer, keeps the headers of the set and the first
// bytes. A worker's connection owns one, reused from answer to answer.
type bodyTap struct {
	hash     snapshots.BodyHasher
	n        int64 // body bytes as received
	sample   bool
	limit    int // the sample's decoded bytes
	keep     int // raw bytes kept, when sampling
	buf      []byte
	header   http.Header
	headers  []string
	encoding string
	grpc     *grpcAnswer // a sampled gRPC answer's encoding and status (grpcsample.go)
}

// rawFactor bounds the encoded bytes kept to decode a sample: a
// compressed body is decoded from at most that many times the sample's
// limit.
const rawFactor = 16

func (tp *bodyTap) start(sample bool, limit int, headers []string) {
	*tp = bodyTap{sample: sample, limit: limit, keep: limit, headers: headers}
}

// restart forgets what an earlier attempt (a 1xx answer, a resend) read.
func (tp *bodyTap) restart() {
	if tp != nil {
		tp.start(tp.sample, tp.limit, tp.headers)
	}
}

// Write takes body bytes; it never fails.
func (tp *bodyTap) Write(p []byte) (int, error) {
	tp.hash.Write(p)
	tp.n += int64(len(p))
	if tp.sample && len(tp.buf) < tp.keep {
		tp.buf = append(tp.buf, p[:min(len(p), tp.keep-len(tp.buf))]...)
	}
	return len(p), nil
}

// headerLine notes a response header line of a sampled answer.
func (tp *bodyTap) headerLine(name, value []byte) {
	if tp == nil || !tp.sample {
		return
	}
	for _, h := range tp.headers {
		if !asciiEqualFold(name, h) {
			continue
		}
		if tp.header == nil {
			tp.header = http.Header{}
		}
		tp.header[h] = append(tp.header[h], string(value))
		if h == "Content-Encoding" {
			tp.encode(string(value))
		}
		return
	}
	if asciiEqualFold(name, "Content-Encoding") {
		tp.encode(string(value))
	}
}

// encode notes the content coding: a compressed body is kept whole, up to
// rawFactor times the limit, to be decoded.
func (tp *bodyTap) encode(v string) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "" || v == "identity" || tp.encoding != "" {
		return
	}
	tp.encoding = v
	tp.keep *= rawFactor
}

// headerOf notes the kept headers of a sampled answer read by net/http.
func (tp *bodyTap) headerOf(h http.Header) {
	if tp == nil || !tp.sample {
		return
	}
	for k, vs := range h {
		for _, v := range vs {
			tp.headerLine([]byte(k), []byte(v))
		}
	}
}

// responseSample is the sample of the answer tp read: the body decoded
// (gzip, deflate), cut at limit.
func (tp *bodyTap) responseSample(t *template, res *snapshots.Result) *snapshots.ResponseSample {
	limit := tp.limit
	s := &snapshots.ResponseSample{ExchangeID: t.id, Endpoint: t.endpoint, Phase: res.Phase, Status: res.Status,
		Header: tp.header, Body: tp.buf, BodySize: tp.n}
	if tp.encoding != "" {
		if body, size, ok := decode(tp.encoding, tp.buf, limit); ok {
			s.Body, s.BodySize = body, size
		}
	}
	if len(s.Body) > limit {
		s.Body = s.Body[:limit]
	}
	if s.Body == nil {
		s.Body = []byte{}
	}
	s.Truncated = s.BodySize > int64(len(s.Body))
	return s
}

// decode undoes a gzip or deflate coding of raw: the first limit bytes and
// the decoded size (of what raw holds, when it was cut). ok is false for
// another coding, or a body that does not decode: it is kept as received.
func decode(coding string, raw []byte, limit int) (body []byte, size int64, ok bool) {
	var zr io.Reader
	var err error
	switch coding {
	case "gzip", "x-gzip":
		zr, err = gzip.NewReader(bytes.NewReader(raw))
	case "deflate": // zlib-wrapped, as the RFC says; raw deflate from some servers
		if zr, err = zlib.NewReader(bytes.NewReader(raw)); err != nil {
			zr, err = flate.NewReader(bytes.NewReader(raw)), nil
		}
	default:
		return nil, 0, false
	}
	if err != nil {
		return nil, 0, false
	}
	var buf bytes.Buffer
	n, err := io.CopyN(&buf, zr, int64(limit))
	if err == nil {
		var rest int64
		rest, err = io.Copy(io.Discard, zr)
		n += rest
	}
	if err != nil && err != io.EOF && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, 0, false
	}
	return buf.Bytes(), n, true
}
