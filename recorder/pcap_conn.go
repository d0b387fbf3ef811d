package recorder

import (
	"bytes"
	"cmp"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/tcpassembly"

	"github.com/replaykit/replay/h2wire"
	"github.com/replaykit/replay/snapshots"
)

// connKey names one direction of a TCP connection, as the assembler does.
type connKey struct{ net, tcp gopacket.Flow }

// pcapConn is one TCP connection of the capture: its two directions, which
// of them is the client, and the messages read but not yet paired.
type pcapConn struct {
	im     *pcapImport
	key    connKey // the direction seen first
	seq    int64   // order of creation
	halves [2]*pcapHalf
	client int    // index of the client's half; -1 while unknown
	server string // the server's ip:port, once the client is known
	port   int
	kind   int // what the client sends: streamUndecided, streamHTTP, streamTLS or streamOther
	http   bool
	// head holds the client's first packets while they are too short to
	// tell what it speaks.
	head      [][]byte
	headTimes []time.Time
	h2        *h2Conn    // an h2c connection's decoder (kind streamH2)
	reqs      []*httpMsg // in order; reqs[0] is answered by resps[0]
	resps     []*httpMsg
	last      time.Time // the last data captured, in either direction
	finished  bool
}

// pcapHalf is one direction of a connection: the stream the assembler
// hands its reassembled bytes to.
type pcapHalf struct {
	c        *pcapConn
	idx      int
	p        msgParser
	fin      bool // a FIN or RST was seen
	complete bool // the assembler is done with it
}

var (
	_ tcpassembly.Stream = (*pcapHalf)(nil)
	_ msgHandler         = (*pcapConn)(nil)
)

// Bounds on the messages a connection keeps unpaired, for captures that
// hold one direction only: no client pipelines this deep.
const (
	maxWaitingResponses = 64 // responses while no request is there to pair them with
	maxWaitingRequests  = 64 // complete requests while no response comes
)

// New is called by the assembler for the first packet of each direction of
// a connection.
func (im *pcapImport) New(netFlow, tcpFlow gopacket.Flow) tcpassembly.Stream {
	k := connKey{netFlow, tcpFlow}
	rev := connKey{netFlow.Reverse(), tcpFlow.Reverse()}
	if c := im.conns[rev]; c != nil && c.halves[1] == nil && !c.finished {
		return c.addHalf(1)
	}
	// A connection of the same addresses and ports is over: the ports were
	// reused.
	for _, old := range []*pcapConn{im.conns[k], im.conns[rev]} {
		if old != nil {
			im.finish(old)
		}
	}
	c := &pcapConn{im: im, key: k, seq: im.nextConn, client: -1}
	im.nextConn++
	im.conns[k] = c
	h := c.addHalf(0)
	if cl := im.guessClient(im.cur); cl >= 0 {
		c.setClient(cl)
	}
	return h
}

// guessClient tells which direction the client sends in from the packet
// that opened the connection (0: that packet's, 1: the other), or -1.
func (im *pcapImport) guessClient(tcp *layers.TCP) int {
	switch {
	case tcp == nil:
		return -1
	case tcp.SYN && !tcp.ACK:
		return 0
	case tcp.SYN && tcp.ACK:
		return 1
	case im.ports != nil:
		src, dst := im.ports[uint16(tcp.SrcPort)], im.ports[uint16(tcp.DstPort)]
		if dst && !src {
			return 0
		}
		if src && !dst {
			return 1
		}
	}
	return -1
}

func (c *pcapConn) addHalf(idx int) *pcapHalf {
	h := &pcapHalf{c: c, idx: idx}
	h.p = msgParser{limit: c.im.limit, h: c, response: c.client >= 0 && idx != c.client}
	c.halves[idx] = h
	return h
}

// setClient makes the half idx the client's, and the other the server's.
func (c *pcapConn) setClient(idx int) {
	c.client = idx
	for i, h := range c.halves {
		if h != nil {
			h.p.response = i != idx
		}
	}
	ip, port := c.key.net.Dst(), c.key.tcp.Dst()
	if idx == 1 {
		ip, port = c.key.net.Src(), c.key.tcp.Src()
	}
	if raw := port.Raw(); len(raw) == 2 {
		c.port = int(raw[0])<<8 | int(raw[1])
	}
	c.server = net.JoinHostPort(net.IP(ip.Raw()).String(), strconv.Itoa(c.port))
	if c.im.ports != nil && !c.im.ports[uint16(c.port)] {
		c.kind = streamOther // a client on a configured port talking to another server
	}
}

// Reassembled is given the next bytes of the direction, in order.
func (h *pcapHalf) Reassembled(rs []tcpassembly.Reassembly) {
	c := h.c
	if c.im.hold(h, rs, false) {
		return
	}
	for i := range rs {
		r := &rs[i]
		if c.finished || c.kind == streamTLS || c.kind == streamOther || c.kind == streamH2 && r.Skip != 0 {
			if c.kind == streamH2 && r.Skip != 0 {
				if r.Skip > 0 {
					c.im.stats.Gaps++
				}
				c.h2.gap(h.idx == c.client)
			}
			h.fin = h.fin || r.End
			continue
		}
		if r.End {
			// A body that ends with the connection ends with this packet.
			h.fin = true
			h.p.feed(nil, r.Seen)
		}
		if r.Seen.After(c.last) {
			c.last = r.Seen
		}
		if r.Skip != 0 {
			if r.Skip > 0 {
				c.im.stats.Gaps++
			}
			h.p.gap(r.Skip)
		}
		if len(r.Bytes) > 0 {
			c.data(h, r.Bytes, r.Seen)
		}
	}
}

// ReassemblyComplete is called when the direction has ended: FIN or RST, or
// the assembler gave up on it (idle, or the capture ended).
func (h *pcapHalf) ReassemblyComplete() {
	c := h.c
	if c.im.hold(h, nil, true) {
		return
	}
	h.complete = true
	if c.finished {
		return
	}
	h.p.end(h.fin)
	if c.halves[0] != nil && c.halves[1] != nil && c.halves[0].complete && c.halves[1].complete {
		c.im.finish(c)
	}
}

// data handles bytes b of half h, captured at t.
func (c *pcapConn) data(h *pcapHalf, b []byte, t time.Time) {
	if c.client < 0 {
		switch {
		case requestStart(b) == streamHTTP || requestStart(b) == streamTLS:
			c.setClient(h.idx)
		case bytes.HasPrefix(b, []byte("HTTP/1.")):
			c.setClient(1 - h.idx)
		default:
			return // who is who cannot be told from the middle of a message
		}
		if c.kind == streamOther {
			return
		}
	}
	if c.kind == streamH2 {
		c.h2.feed(h.idx == c.client, b, t)
		return
	}
	if h.idx != c.client || c.kind != streamUndecided {
		h.p.feed(b, t)
		return
	}
	c.head = append(c.head, append([]byte(nil), b...))
	c.headTimes = append(c.headTimes, t)
	head := bytes.Join(c.head, nil)
	if n := min(len(head), len(h2wire.Preface)); string(head[:n]) == h2wire.Preface[:n] {
		if n < len(h2wire.Preface) {
			return // HTTP/2's preface, or a PRI request line: too soon to tell
		}
		c.kind, c.http, c.h2 = streamH2, true, newH2Conn(c)
		for i, piece := range c.head {
			c.h2.feed(true, piece, c.headTimes[i])
		}
		c.head, c.headTimes = nil, nil
		return
	}
	switch c.kind = requestStart(head); c.kind {
	case streamUndecided:
		if len(head) <= maxRequestLine {
			return
		}
		c.notHTTP("the client's first bytes are not an HTTP/1 request line")
	case streamTLS:
		c.im.stats.TLSConnections++
		c.im.logger.Debug("pcap: skipping a TLS connection: it cannot be decrypted", "server", c.server)
	case streamOther:
		c.notHTTP("the client's first bytes are not an HTTP/1 request line")
	case streamHTTP:
		for i, piece := range c.head {
			h.p.feed(piece, c.headTimes[i])
		}
	}
	c.head, c.headTimes = nil, nil
}

// notHTTP gives up on the connection.
func (c *pcapConn) notHTTP(reason string) {
	c.kind = streamOther
	if c.im.ports != nil {
		c.im.stats.OtherConnections++
	}
	c.im.logger.Debug("pcap: skipping a connection that is not HTTP/1", "server", c.server, "reason", reason)
}

func (c *pcapConn) started(p *msgParser, m *httpMsg) {
	if p.response {
		c.resps = append(c.resps, m)
		return
	}
	if !c.http {
		c.http = true
		c.im.stats.Connections++
		c.im.httpPorts[c.port] = true
	}
	m.id = c.im.sink.NewID()
	c.im.sink.CountSeen(snapshots.Inbound)
	c.reqs = append(c.reqs, m)
	for len(c.reqs) > maxWaitingRequests && len(c.resps) == 0 && c.reqs[0].done {
		c.emit(c.reqs[0], nil, "")
		c.reqs = c.reqs[1:]
	}
}

func (c *pcapConn) ended(*msgParser, *httpMsg) { c.pair() }

func (c *pcapConn) answering() *http.Request {
	if i := len(c.resps); i < len(c.reqs) {
		return c.reqs[i].req
	}
	return nil
}

func (c *pcapConn) unparsable(p *msgParser, err error) {
	if !p.response && !c.http {
		c.notHTTP(err.Error())
		return
	}
	c.im.logger.Debug("pcap: skipping an unreadable "+p.what(), "server", c.server, "err", err)
}

func (c *pcapConn) upgraded() {
	for _, h := range c.halves {
		if h != nil {
			h.p.state = stDone
		}
	}
}

// pair writes the exchanges whose request and response are both complete,
// in order.
func (c *pcapConn) pair() {
	for len(c.resps) > 0 && c.resps[0].done {
		res := c.resps[0]
		if len(c.reqs) == 0 {
			if len(c.resps) > maxWaitingResponses {
				c.resps = c.resps[1:]
				c.im.stats.OrphanResponses++
				continue
			}
			return // its request may still be on its way (out-of-order delivery)
		}
		if res.afterGap {
			// Whole responses may have been lost before this one: it
			// answers the last request sent before it started (HTTP/1
			// clients rarely pipeline).
			for len(c.reqs) > 1 && c.reqs[1].start.Before(res.start) {
				c.emit(c.reqs[0], nil, "no response in the capture: the packets were lost")
				c.reqs = c.reqs[1:]
			}
			res.afterGap = false
		}
		req := c.reqs[0]
		if res.start.Before(req.start) {
			// It answers a request sent before the capture began.
			c.resps = c.resps[1:]
			c.im.stats.OrphanResponses++
			continue
		}
		if !req.done {
			return
		}
		c.reqs, c.resps = c.reqs[1:], c.resps[1:]
		c.emit(req, res, "")
	}
}

// emit writes the exchange of req and its response res; when res is nil,
// noResponse says why (empty: none was captured).
func (c *pcapConn) emit(req, res *httpMsg, noResponse string) {
	im := c.im
	r := req.req
	if r.Host == "" {
		r.Host = c.server // HTTP/1.0 may not say
	}
	e := &snapshots.Exchange{
		ID:              req.id,
		Direction:       snapshots.Inbound,
		Protocol:        "http",
		Service:         service(r, "http"),
		Start:           req.start,
		Method:          r.Method,
		URL:             absoluteURL(r, "http"),
		Proto:           r.Proto,
		RequestHeader:   r.Header,
		RequestBody:     req.body,
		RequestBodySize: req.size,
		TraceID:         TraceID(r.Header.Get("Traceparent")),
		Error:           req.err,
		ClientConn:      c.seq + 1,
	}
	end := req.end
	if c.last.After(end) {
		end = c.last
	}
	if res != nil {
		end = res.end
		e.Status = res.res.StatusCode
		e.ResponseHeader = res.res.Header
		e.ResponseBody, e.ResponseBodySize = res.body, res.size
		if e.Error == "" {
			e.Error = res.err
		}
	} else if e.Error == "" {
		e.Error = cmp.Or(noResponse, "no response in the capture")
	}
	e.Duration = max(0, end.Sub(req.start))
	im.stats.Exchanges++
	if e.Error != "" {
		im.stats.Incomplete++
	}
	im.sink.AddExchange(e)
}

// idleSince reports whether the assembler is done with every direction of
// the connection and nothing was captured on it since t.
func (c *pcapConn) idleSince(t time.Time) bool {
	for _, h := range c.halves {
		if h != nil && !h.complete {
			return false
		}
	}
	return c.last.Before(t)
}

// finish ends the connection: messages cut short are closed, and requests
// left without a response are written with an error.
func (im *pcapImport) finish(c *pcapConn) {
	if c.finished {
		return
	}
	for _, h := range c.halves {
		if h != nil {
			h.p.end(h.fin)
		}
	}
	c.finished = true
	if c.h2 != nil {
		c.h2.end("the connection ended before the stream did")
	}
	c.pair()
	for _, req := range c.reqs {
		c.emit(req, nil, "")
	}
	im.stats.OrphanResponses += int64(len(c.resps))
	c.reqs, c.resps = nil, nil
	delete(im.conns, c.key)
}
