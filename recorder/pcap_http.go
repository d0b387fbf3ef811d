package recorder

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// httpMsg is one HTTP/1 request or response read from a TCP stream.
type httpMsg struct {
	start time.Time // when its first byte was captured
	end   time.Time // when its last byte was captured
	req   *http.Request
	res   *http.Response
	id    int64 // exchange ID of a request
	body  []byte
	size  int64
	want  int64 // length of a fixed-length body; -1 for other framings
	done  bool
	err   string // why the message is incomplete
	// afterGap marks the first message read after bytes were lost: whole
	// messages may have been lost with them.
	afterGap bool
}

// msgHandler is told about the messages a msgParser reads; pcapConn is one.
type msgHandler interface {
	// started is told of a message whose headers have been read.
	started(p *msgParser, m *httpMsg)
	// ended is told that a message started before is complete or has
	// failed (m.err set).
	ended(p *msgParser, m *httpMsg)
	// answering returns the request that the next response answers, when
	// known (it tells a HEAD response, which has no body).
	answering() *http.Request
	// unparsable is told of a start line and headers that are not HTTP/1.
	unparsable(p *msgParser, err error)
	// upgraded is told that the connection switched protocols (101).
	upgraded()
}

type parseState uint8

const (
	stIdle       parseState = iota // between messages
	stLost                         // out of step: waiting for a packet that starts a message
	stHeader                       // reading the start line and headers
	stBody                         // reading a body of known length
	stUntilClose                   // reading a body that ends with the connection
	stChunkSize                    // reading a chunk-size line
	stChunkData                    // reading chunk data
	stChunkEnd                     // reading the CRLF after chunk data
	stTrailer                      // reading the trailer section
	stDone                         // the stream has ended, or left HTTP
)

// Limits on what is buffered while a message is incomplete.
const (
	maxHeaderBytes = http.DefaultMaxHeaderBytes // start line and headers
	maxLineBytes   = 64 << 10                   // a chunk-size or trailer line
)

// msgParser reads the HTTP/1 messages of one direction of a TCP connection
// as its bytes arrive, packet by packet. It keeps no more than the headers
// of the message being read and the first limit bytes of its body.
type msgParser struct {
	response bool
	limit    int64
	h        msgHandler

	state  parseState
	msg    *httpMsg
	buf    []byte // headers read so far
	scan   int    // where to resume looking for the end of the headers
	line   []byte // chunk-size or trailer line read so far
	remain int64  // bytes left in the body or chunk
	last   time.Time
	// resynced is set when the parser lost bytes or its step, until the
	// next message starts.
	resynced bool
}

// feed parses p, the next bytes of the stream, captured at t.
func (p *msgParser) feed(b []byte, t time.Time) {
	p.last = t
	if m := p.msg; m != nil && t.After(m.end) {
		// Out-of-order segments arrive before the ones they follow: the
		// message ends with the latest packet, whatever its place.
		m.end = t
	}
	for len(b) > 0 {
		switch p.state {
		case stDone:
			return
		case stLost:
			if !p.startsMessage(b) {
				return
			}
			p.state = stIdle
		case stIdle:
			// Empty lines before a message are allowed (RFC 9112 §2.2).
			for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
				b = b[1:]
			}
			if len(b) == 0 {
				return
			}
			p.msg = &httpMsg{start: t, end: t, want: -1, afterGap: p.resynced}
			p.resynced = false
			p.buf, p.scan = p.buf[:0], 0
			p.state = stHeader
		case stHeader:
			b = p.header(b, t)
		case stBody, stChunkData:
			n := min(int64(len(b)), p.remain)
			p.addBody(b[:n])
			b, p.remain = b[n:], p.remain-n
			if p.remain == 0 {
				if p.state == stBody {
					p.complete(t)
				} else {
					p.state = stChunkEnd
				}
			}
		case stUntilClose:
			p.addBody(b)
			return
		case stChunkSize:
			b = p.chunkSize(b, t)
		case stChunkEnd:
			switch b[0] {
			case '\r':
			case '\n':
				p.state = stChunkSize
			default:
				p.fail(t, "bad chunked encoding: no line end after chunk data")
				return
			}
			b = b[1:]
		case stTrailer:
			b = p.trailer(b, t)
		}
	}
}

// startsMessage reports whether b, the first bytes of a packet, look like
// the start of a message, where a parser out of step can pick up again.
func (p *msgParser) startsMessage(b []byte) bool {
	if p.response {
		return bytes.HasPrefix(b, []byte("HTTP/1."))
	}
	return requestStart(b) == streamHTTP
}

// header collects the start line and headers and parses them once they are
// complete; it returns the bytes after them.
func (p *msgParser) header(b []byte, t time.Time) []byte {
	p.buf = append(p.buf, b...)
	end := headerEnd(p.buf, p.scan)
	if end < 0 {
		if len(p.buf) > maxHeaderBytes {
			p.unparsable(fmt.Errorf("headers longer than %d bytes", maxHeaderBytes))
		}
		p.scan = max(0, len(p.buf)-2)
		return nil
	}
	rest := p.buf[end:]
	br := bufio.NewReaderSize(bytes.NewReader(p.buf[:end]), end) // one read holds it all
	m := p.msg
	if !p.response {
		req, err := http.ReadRequest(br)
		if err == nil && req.ProtoMajor != 1 {
			err = fmt.Errorf("%s is not HTTP/1", req.Proto)
		}
		if err != nil {
			p.unparsable(err)
			return nil
		}
		m.req = req
		p.h.started(p, m)
		switch {
		case len(req.TransferEncoding) > 0: // net/http accepts only chunked
			p.state = stChunkSize
		case req.ContentLength > 0:
			p.fixedBody(req.ContentLength)
		default:
			p.complete(t)
		}
		return rest
	}
	answering := p.h.answering()
	res, err := http.ReadResponse(br, answering)
	switch {
	case err != nil:
	case res.ProtoMajor != 1:
		err = fmt.Errorf("%s is not HTTP/1", res.Proto)
	case res.StatusCode < 100 || res.StatusCode > 599:
		// net/http reads any three digits; only 100-599 is a status
		// (as snapshot import checks).
		err = fmt.Errorf("status %03d out of range", res.StatusCode)
	}
	if err != nil {
		p.unparsable(err)
		return nil
	}
	code := res.StatusCode
	if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
		p.msg, p.state = nil, stIdle // an interim response (100 Continue): the final one follows
		return rest
	}
	m.res = res
	p.h.started(p, m)
	switch {
	case code == http.StatusSwitchingProtocols:
		p.complete(t)
		p.h.upgraded()
		return nil
	case answering != nil && answering.Method == http.MethodHead,
		code == http.StatusNoContent, code == http.StatusNotModified:
		p.complete(t)
	case len(res.TransferEncoding) > 0:
		p.state = stChunkSize
	case res.ContentLength > 0:
		p.fixedBody(res.ContentLength)
	case res.ContentLength == 0:
		p.complete(t)
	default:
		p.state = stUntilClose
	}
	return rest
}

// fixedBody starts reading a body of n bytes.
func (p *msgParser) fixedBody(n int64) {
	p.state, p.remain, p.msg.want = stBody, n, n
	// Preallocate what the length promises (and the limit allows), within
	// reason: a corrupt length must not reserve a megabyte per message.
	p.msg.body = make([]byte, 0, min(n, p.limit, 64<<10))
}

// headerEnd returns the index just past the empty line that ends the
// headers in b, looking from index from, or -1.
func headerEnd(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		i += j
		if i+1 < len(b) && b[i+1] == '\n' {
			return i + 2
		}
		if i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n' {
			return i + 3
		}
	}
	return -1
}

// chunkSize reads a chunk-size line; it returns the bytes after it.
func (p *msgParser) chunkSize(b []byte, t time.Time) []byte {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		p.line = append(p.line, b...)
		if len(p.line) > maxLineBytes {
			p.fail(t, "bad chunked encoding: chunk-size line too long")
		}
		return nil
	}
	p.line = append(p.line, b[:i]...)
	size, ok := parseChunkSize(p.line)
	p.line = p.line[:0]
	if !ok {
		p.fail(t, "bad chunked encoding: bad chunk size")
		return nil
	}
	if size == 0 {
		p.state = stTrailer
	} else {
		p.state, p.remain = stChunkData, size
	}
	return b[i+1:]
}

// parseChunkSize parses "1a3f[;ext=val][\r]".
func parseChunkSize(line []byte) (int64, bool) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	n, err := strconv.ParseInt(string(bytes.Trim(line, " \t")), 16, 63)
	return n, err == nil && n >= 0
}

// trailer skips the trailer section, up to the empty line that ends the
// message; it returns the bytes after it.
func (p *msgParser) trailer(b []byte, t time.Time) []byte {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.line = append(p.line, b...)
			if len(p.line) > maxLineBytes {
				p.fail(t, "bad chunked encoding: trailer line too long")
			}
			return nil
		}
		p.line = append(p.line, b[:i]...)
		b = b[i+1:]
		empty := len(bytes.TrimSuffix(p.line, []byte("\r"))) == 0
		p.line = p.line[:0]
		if empty {
			p.complete(t)
			return b
		}
	}
	return nil
}

// addBody counts body bytes and keeps them up to the limit.
func (p *msgParser) addBody(b []byte) {
	m := p.msg
	m.size += int64(len(b))
	if room := p.limit - int64(len(m.body)); room > 0 {
		m.body = append(m.body, b[:min(int64(len(b)), room)]...)
	}
}

// complete ends the message being read with its last byte captured at t.
func (p *msgParser) complete(t time.Time) {
	m := p.msg
	if t.After(m.end) {
		m.end = t
	}
	m.done = true
	p.msg, p.state = nil, stIdle
	p.h.ended(p, m)
}

// fail ends the message being read as incomplete, and waits for a packet
// that starts a new one.
func (p *msgParser) fail(t time.Time, reason string) {
	if m := p.msg; m != nil && (m.req != nil || m.res != nil) {
		if t.After(m.end) {
			m.end = t
		}
		m.done = true
		m.err = p.what() + " cut short: " + reason
		p.h.ended(p, m)
	}
	p.msg, p.state, p.resynced = nil, stLost, true
	p.line = p.line[:0]
}

func (p *msgParser) unparsable(err error) {
	p.msg, p.state, p.resynced = nil, stLost, true
	p.h.unparsable(p, err)
}

func (p *msgParser) what() string {
	if p.response {
		return "response"
	}
	return "request"
}

// gap tells the parser that n bytes of the stream were not captured; -1
// means the capture began inside the stream.
func (p *msgParser) gap(n int) {
	switch p.state {
	case stDone:
	case stIdle, stLost:
		p.state, p.resynced = stLost, true
	default:
		if n < 0 {
			p.fail(p.last, "the capture lost part of it")
		} else {
			p.fail(p.last, fmt.Sprintf("the capture lost %d bytes of it", n))
		}
	}
}

// end tells the parser that the stream has ended: with a FIN or RST seen
// when fin is set, else because the capture ends (or gave up on it).
func (p *msgParser) end(fin bool) {
	switch p.state {
	case stUntilClose:
		if fin {
			p.complete(p.last)
		} else {
			p.fail(p.last, fmt.Sprintf("the capture ends before the connection does, after %d body bytes", p.msg.size))
		}
	case stBody:
		p.fail(p.last, fmt.Sprintf("the capture has %d of %d body bytes", p.msg.size, p.msg.want))
	case stChunkSize, stChunkData, stChunkEnd, stTrailer:
		p.fail(p.last, fmt.Sprintf("the capture ends inside the chunked body, after %d bytes", p.msg.size))
	}
	p.msg, p.state = nil, stDone
}

// Verdicts on the first bytes a client sends.
const (
	streamUndecided = iota // too few bytes to tell
	streamHTTP             // an HTTP/1 request line
	streamTLS              // a TLS handshake record
	streamOther
	streamH2 // HTTP/2's client preface: h2c with prior knowledge (pcap_h2.go)
)

// maxRequestLine bounds how far a request line is looked for.
const maxRequestLine = 8 << 10

// requestStart judges the first bytes a client sent: a TLS ClientHello
// starts with a handshake record header (0x16 0x03 0x00..0x04); an HTTP/1
// request with a request line, "METHOD SP request-target SP HTTP/1.".
// streamUndecided means b is too short to tell.
func requestStart(b []byte) int {
	if len(b) > 0 && b[0] == 0x16 {
		if len(b) < 3 {
			return streamUndecided
		}
		if b[1] == 3 && b[2] <= 4 {
			return streamTLS
		}
		return streamOther
	}
	i := 0
	for ; i < len(b) && b[i] != ' '; i++ {
		if i >= 20 || !isTokenChar(b[i]) {
			return streamOther
		}
	}
	if i == 0 && len(b) > 0 {
		return streamOther
	}
	j := i + 1
	for ; j < len(b) && b[j] != ' '; j++ {
		if b[j] < 0x21 || b[j] == 0x7f || j >= maxRequestLine {
			return streamOther
		}
	}
	if j >= len(b) {
		return streamUndecided
	}
	if j == i+1 {
		return streamOther // no request target
	}
	version, rest := []byte("HTTP/1."), b[j+1:]
	if len(rest) < len(version) {
		if bytes.HasPrefix(version, rest) {
			return streamUndecided
		}
		return streamOther
	}
	if !bytes.HasPrefix(rest, version) {
		return streamOther
	}
	return streamHTTP
}

// isTokenChar reports whether c may appear in an HTTP token (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return c != 0 && bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0
}
