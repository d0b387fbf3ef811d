package recorder

import (
	"cmp"
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/replaykit/replay/grpcwire"
	"github.com/replaykit/replay/h2wire"
	"github.com/replaykit/replay/snapshots"
)

// h2Conn is a captured h2c connection (HTTP/2 with prior knowledge, as
// gRPC clients speak it): its streams become exchanges as they end.
type h2Conn struct {
	c       *pcapConn
	conn    *h2wire.Conn
	streams map[uint32]*h2Stream
	order   []uint32 // streams in the order they began, for the end
}

var _ h2wire.Handler = (*h2Conn)(nil)

// h2Stream is one stream: one exchange.
type h2Stream struct {
	e                snapshots.Exchange
	reqEnd, resEnd   bool
	gotResponse      bool
	reqBody, resBody pcapBody
	client, server   *grpcwire.Stream
	now              time.Time // the time of the bytes being fed (grpcwire.Stream.Now)
	last             time.Time
}

// pcapBody keeps the first limit bytes of a body and counts them all.
type pcapBody struct {
	buf  []byte
	size int64
}

func (b *pcapBody) add(p []byte, limit int64) {
	b.size += int64(len(p))
	if room := limit - int64(len(b.buf)); room > 0 {
		b.buf = append(b.buf, p[:min(int64(len(p)), room)]...)
	}
}

func newH2Conn(c *pcapConn) *h2Conn {
	h := &h2Conn{c: c, streams: map[uint32]*h2Stream{}}
	h.conn = h2wire.NewConn(h)
	c.im.stats.Connections++
	c.im.stats.HTTP2Connections++
	return h
}

// feed decodes bytes of the client's (client) or the server's direction.
func (h *h2Conn) feed(client bool, b []byte, t time.Time) {
	if h.conn.Broken() != nil {
		return
	}
	h.conn.Feed(client, b, t)
	if err := h.conn.Broken(); err != nil {
		h.c.im.logger.Debug("pcap: stopped decoding an HTTP/2 connection", "server", h.c.server, "err", err)
		h.c.im.stats.HTTP2Broken++
		h.end("capture: " + err.Error())
	}
}

// gap notes bytes the capture lost: the HPACK state is gone with them.
func (h *h2Conn) gap(client bool) {
	if h.conn.Broken() == nil {
		h.conn.Gap(client)
		h.c.im.stats.HTTP2Broken++
		h.end("capture: " + h.conn.Broken().Error())
	}
}

// end writes the streams still open, with why they did not end.
func (h *h2Conn) end(why string) {
	for _, id := range h.order {
		if s := h.streams[id]; s != nil {
			s.e.Error = cmp.Or(s.e.Error, why)
			h.emit(id, s)
		}
	}
	h.order = nil
}

func (h *h2Conn) Headers(id uint32, client bool, fields []hpack.HeaderField, end bool, t time.Time) {
	s := h.streams[id]
	switch {
	case client && s == nil:
		s = h.begin(id, fields, t)
	case s == nil:
		h.c.im.stats.OrphanResponses++ // the request was before the capture
		return
	case !client && !s.gotResponse:
		hdr, status := fieldsHeader(fields)
		if status >= 100 && status < 200 {
			return // informational
		}
		s.gotResponse, s.e.Status, s.e.ResponseHeader = true, status, hdr
		if s.client != nil {
			s.server.Encoding = hdr.Get("Grpc-Encoding")
		}
	case !client:
		s.e.ResponseTrailer, _ = fieldsHeader(fields)
	}
	s.last = t
	h.ended(id, s, client, end)
}

// begin starts the exchange of a request's header block.
func (h *h2Conn) begin(id uint32, fields []hpack.HeaderField, t time.Time) *h2Stream {
	im := h.c.im
	s := &h2Stream{last: t}
	hdr, _ := fieldsHeader(fields)
	var method, path, authority string
	for _, f := range fields {
		switch f.Name {
		case ":method":
			method = f.Value
		case ":path":
			path = f.Value
		case ":authority":
			authority = f.Value
		}
	}
	authority = cmp.Or(authority, hdr.Get("Host"), h.c.server)
	svc := authority
	if !hasPort(svc) {
		svc = net.JoinHostPort(strings.Trim(svc, "[]"), "80")
	}
	s.e = snapshots.Exchange{ID: im.sink.NewID(), Direction: snapshots.Inbound, Protocol: "http", Service: svc,
		Start: t, Method: method, URL: "http://" + authority + path, Proto: "HTTP/2.0", RequestHeader: hdr,
		TraceID: TraceID(hdr.Get("Traceparent")), ClientConn: h.c.seq + 1}
	im.sink.CountSeen(snapshots.Inbound)
	if s.e.IsGRPC() {
		keep, budget := int(im.limit), im.limit
		if im.limit <= 0 {
			keep, budget = 1, 1
		}
		now := func() time.Time { return s.now }
		s.client = &grpcwire.Stream{From: snapshots.FromClient, Start: t, Encoding: hdr.Get("Grpc-Encoding"), Keep: keep, Budget: budget, Now: now}
		s.server = &grpcwire.Stream{From: snapshots.FromServer, Start: t, Keep: keep, Budget: budget, Now: now}
	}
	h.streams[id] = s
	h.order = append(h.order, id)
	return s
}

// fieldsHeader turns a header block into a header (pseudo-headers left
// out) and its :status.
func fieldsHeader(fields []hpack.HeaderField) (http.Header, int) {
	h := make(http.Header, len(fields))
	status := 0
	for _, f := range fields {
		if strings.HasPrefix(f.Name, ":") {
			if f.Name == ":status" {
				for _, c := range f.Value {
					status = status*10 + int(c-'0')
				}
			}
			continue
		}
		k := http.CanonicalHeaderKey(f.Name)
		h[k] = append(h[k], f.Value)
	}
	return h, status
}

func (h *h2Conn) Data(id uint32, client bool, data []byte, end bool, t time.Time) {
	s := h.streams[id]
	if s == nil {
		return
	}
	s.now, s.last = t, t
	limit := h.c.im.limit
	switch {
	case client && s.client != nil:
		s.client.Write(data)
	case client:
		s.reqBody.add(data, limit)
	case s.server != nil:
		s.server.Write(data)
	default:
		s.resBody.add(data, limit)
	}
	h.ended(id, s, client, end)
}

func (h *h2Conn) Reset(id uint32, client bool, code http2.ErrCode, t time.Time) {
	s := h.streams[id]
	if s == nil {
		return
	}
	s.last = t
	s.e.Error = "stream reset by the " + map[bool]string{true: "client", false: "server"}[client] + ": " + code.String()
	h.emit(id, s)
}

// ended notes the end of one side of stream id; both ended, it is written.
func (h *h2Conn) ended(id uint32, s *h2Stream, client, end bool) {
	if !end {
		return
	}
	if client {
		s.reqEnd = true
	} else {
		s.resEnd = true
	}
	if s.reqEnd && s.resEnd || s.resEnd && s.gotResponse {
		h.emit(id, s)
	}
}

// emit writes stream id's exchange.
func (h *h2Conn) emit(id uint32, s *h2Stream) {
	im := h.c.im
	delete(h.streams, id)
	e := &s.e
	e.Duration = max(0, s.last.Sub(e.Start))
	if s.client != nil {
		for _, st := range []*grpcwire.Stream{s.client, s.server} {
			if err := st.Close(); err != nil && e.Error == "" {
				e.Error = "capture: " + err.Error()
			}
		}
		e.RequestBodySize, e.ResponseBodySize = s.client.WireBytes(), s.server.WireBytes()
		e.Messages = mergeMessages(s.client.Messages(), s.server.Messages())
		if im.limit <= 0 {
			for i := range e.Messages {
				e.Messages[i].Data = nil
			}
		}
	} else {
		e.RequestBody, e.RequestBodySize = s.reqBody.buf, s.reqBody.size
		e.ResponseBody, e.ResponseBodySize = s.resBody.buf, s.resBody.size
	}
	if !s.gotResponse && e.Error == "" {
		e.Error = "no response in the capture"
	}
	im.stats.Exchanges++
	if e.Error != "" {
		im.stats.Incomplete++
	}
	im.sink.AddExchange(e)
}
