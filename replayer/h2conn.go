package replayer

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// One connection of the direct HTTP/2 client (h2direct.go): frames are
// appended to out under mu and written by the writer goroutine, all that
// was queued while it wrote in one write; the reader goroutine reads
// frames and ends streams.

// The windows this client gives the server: 4 MiB per stream and 1 GiB for
// the connection, as x/net/http2's transport does; received data is
// acknowledged once half of one is used.
const (
	h2StreamWindow = 4 << 20
	h2ConnWindow   = 1 << 30
	h2MaxReadFrame = 16 << 10 // the default, not changed in SETTINGS
	h2MaxStreamID  = 1<<31 - 1
)

type h2Conn struct {
	nc   net.Conn
	fr   *http2.Framer
	wake chan struct{} // a frame is queued (buffered: one wakes)
	quit chan struct{} // closed when the connection ends

	mu       sync.Mutex
	out      []byte // frames queued
	spare    []byte // the buffer out swaps with, nil while written
	streams  map[uint32]*h2Stream
	blocked  []*h2Stream   // streams with DATA the flow-control windows hold back
	freed    chan struct{} // closed when a stream ends, for open waiting on a slot
	nextID   uint32
	max      int   // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	settings bool  // the server's first SETTINGS came
	sendWin  int64 // the connection's send window
	initWin  int64 // the server's SETTINGS_INITIAL_WINDOW_SIZE
	maxFrame int   // the server's SETTINGS_MAX_FRAME_SIZE
	recv     int64 // received, not yet acknowledged
	err      error // set when no new stream may open: GOAWAY, a failure
	retired  bool  // replaced: closed once its last stream ends
	dead     bool
}

// h2Stream is one request and its answer.
type h2Stream struct {
	id uint32
	// Sending, under the connection's mu.
	body    []byte // left to send
	end     bool   // END_STREAM goes with the body's last frame
	halfEnd bool   // END_STREAM sent
	win     int64
	recv    int64 // received, not yet acknowledged

	mu        sync.Mutex
	done      chan struct{}
	finished  bool // the answer is complete or failed: err
	abandoned bool // the caller gave up (deadline, cancel): nothing written to tap
	grpc      bool
	open      bool // a gRPC call whose client stream stays open (grpcTemplate.open)
	tap       *bodyTap
	w         *bodyTap // where body bytes go; nil: counted only
	status    int
	header    http.Header
	trailer   http.Header
	n         int64
	err       error
}

var h2Preface = []byte(http2.ClientPreface)

func newH2Conn(nc net.Conn) *h2Conn {
	c := &h2Conn{nc: nc, wake: make(chan struct{}, 1), quit: make(chan struct{}),
		streams: map[uint32]*h2Stream{}, nextID: 1, max: 100,
		sendWin: 65535, initWin: 65535, maxFrame: 16384}
	c.fr = http2.NewFramer(nil, bufio.NewReaderSize(nc, 32<<10))
	c.fr.SetMaxReadFrameSize(h2MaxReadFrame)
	c.fr.SetReuseFrames()
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 10 << 20
	b := append(c.out, h2Preface...)
	b = appendFrameHeader(b, 6*2, http2.FrameSettings, 0, 0)
	b = appendSetting(b, http2.SettingEnablePush, 0)
	b = appendSetting(b, http2.SettingInitialWindowSize, h2StreamWindow)
	b = appendWindowUpdate(b, 0, h2ConnWindow-65535)
	c.out = b
	c.wake <- struct{}{}
	go c.writeLoop()
	go c.readLoop()
	return c
}

func appendFrameHeader(b []byte, n int, t http2.FrameType, flags http2.Flags, id uint32) []byte {
	return append(b, byte(n>>16), byte(n>>8), byte(n), byte(t), byte(flags),
		byte(id>>24), byte(id>>16), byte(id>>8), byte(id))
}

func appendSetting(b []byte, id http2.SettingID, v uint32) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(id))
	return binary.BigEndian.AppendUint32(b, v)
}

func appendWindowUpdate(b []byte, id uint32, inc uint32) []byte {
	b = appendFrameHeader(b, 4, http2.FrameWindowUpdate, 0, id)
	return binary.BigEndian.AppendUint32(b, inc)
}

func appendRSTStream(b []byte, id uint32, code http2.ErrCode) []byte {
	b = appendFrameHeader(b, 4, http2.FrameRSTStream, 0, id)
	return binary.BigEndian.AppendUint32(b, uint32(code))
}

// usable reports whether a new stream may open on c.
func (c *h2Conn) usable() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err == nil && !c.retired && c.nextID < h2MaxStreamID
}

// retire closes c once its last stream ends.
func (c *h2Conn) retire() {
	c.mu.Lock()
	c.retired = true
	idle := len(c.streams) == 0
	c.mu.Unlock()
	if idle {
		c.fail(errors.New("http2: connection closed"))
	}
}

// flush wakes the writer; called with mu held, after queueing frames.
func (c *h2Conn) flush() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *h2Conn) writeLoop() {
	for {
		select {
		case <-c.wake:
		case <-c.quit:
			return
		}
		c.mu.Lock()
		buf := c.out
		c.out, c.spare = c.spare[:0], nil
		c.mu.Unlock()
		if len(buf) > 0 {
			if _, err := c.nc.Write(buf); err != nil {
				c.fail(fmt.Errorf("http2: writing to the server: %w", err))
				return
			}
		}
		c.mu.Lock()
		c.spare = buf[:0]
		c.mu.Unlock()
	}
}

// open starts a stream for t with traceparent tp: its HEADERS and as much
// of its DATA as the windows allow queued. It waits for a stream slot
// when the server's limit is reached.
func (c *h2Conn) open(ctx context.Context, t *template, tp string, tap *bodyTap) (*h2Stream, error) {
	block := t.h2.headerBlock(t)
	g := t.h2.grpc
	s := &h2Stream{done: make(chan struct{}), tap: tap, grpc: g != nil, open: g != nil && g.open,
		body: t.body, end: !(g != nil && g.open)}
	c.mu.Lock()
	for c.err == nil && len(c.streams) >= c.max {
		if c.freed == nil {
			c.freed = make(chan struct{})
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	if c.err != nil || c.nextID >= h2MaxStreamID {
		err := c.err
		c.mu.Unlock()
		return nil, fmt.Errorf("%w (%v)", errUnprocessed, err)
	}
	s.id, s.win = c.nextID, c.initWin
	c.nextID += 2
	c.streams[s.id] = s
	c.queueHeaders(s, block, tp, !t.h2.send)
	if t.h2.send && !c.pushData(s) {
		c.blocked = append(c.blocked, s)
	}
	c.flush()
	c.mu.Unlock()
	return s, nil
}

// queueHeaders queues s's HEADERS (and CONTINUATION frames past the
// server's frame size): block and the traceparent.
func (c *h2Conn) queueHeaders(s *h2Stream, block []byte, tp string, endStream bool) {
	flags := http2.FlagHeadersEndHeaders
	if endStream {
		flags |= http2.FlagHeadersEndStream
		s.halfEnd = true
	}
	start := len(c.out)
	c.out = appendFrameHeader(c.out, 0, http2.FrameHeaders, flags, s.id)
	c.out = append(c.out, block...)
	c.out = appendHPACK(c.out, "traceparent", tp)
	n := len(c.out) - start - 9
	if n <= c.maxFrame {
		c.out[start], c.out[start+1], c.out[start+2] = byte(n>>16), byte(n>>8), byte(n)
		return
	}
	frag := append([]byte(nil), c.out[start+9:]...)
	c.out = c.out[:start]
	for typ := http2.FrameHeaders; len(frag) > 0; typ = http2.FrameContinuation {
		k := min(len(frag), c.maxFrame)
		f := flags &^ http2.FlagHeadersEndHeaders
		if typ == http2.FrameContinuation {
			f = 0
		}
		if k == len(frag) {
			f |= http2.FlagHeadersEndHeaders
		}
		c.out = appendFrameHeader(c.out, k, typ, f, s.id)
		c.out = append(c.out, frag[:k]...)
		frag = frag[k:]
	}
}

// pushData queues as much of s's body as the windows allow, and reports
// whether all of it is queued. Called with mu held.
func (c *h2Conn) pushData(s *h2Stream) bool {
	if !c.settings {
		// Not before the server's SETTINGS: a server (Go's) holds the
		// client to the window it announces there at once.
		return len(s.body) == 0
	}
	for len(s.body) > 0 {
		n := int64(min(len(s.body), c.maxFrame))
		n = min(n, c.sendWin, s.win)
		if n <= 0 {
			return false
		}
		var flags http2.Flags
		if int(n) == len(s.body) && s.end {
			flags, s.halfEnd = http2.FlagDataEndStream, true
		}
		c.out = appendFrameHeader(c.out, int(n), http2.FrameData, flags, s.id)
		c.out = append(c.out, s.body[:n]...)
		s.body = s.body[n:]
		c.sendWin -= n
		s.win -= n
	}
	return true
}

// pushBlocked queues what the windows now allow of blocked streams' DATA.
// Called with mu held.
func (c *h2Conn) pushBlocked() {
	kept := c.blocked[:0]
	for _, s := range c.blocked {
		if c.streams[s.id] == s && !c.pushData(s) {
			kept = append(kept, s)
		}
	}
	clear(c.blocked[len(kept):])
	c.blocked = kept
	c.flush()
}

// wait waits for s's answer, or ctx's end: then s is reset (CANCEL) and
// ctx's error returned.
func (c *h2Conn) wait(ctx context.Context, s *h2Stream) error {
	select {
	case <-s.done:
		if s.err != nil && ctx.Err() != nil {
			return ctx.Err() // the server's reset of a call past its deadline
		}
		return s.err
	case <-ctx.Done():
	}
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		if s.err != nil {
			return ctx.Err()
		}
		return nil
	}
	s.abandoned = true
	s.mu.Unlock()
	c.mu.Lock()
	if c.streams[s.id] == s {
		c.remove(s)
		if !c.dead {
			c.out = appendRSTStream(c.out, s.id, http2.ErrCodeCancel)
			c.flush()
		}
	}
	c.mu.Unlock()
	return ctx.Err()
}

// remove forgets s, freeing its slot. Called with mu held.
func (c *h2Conn) remove(s *h2Stream) {
	delete(c.streams, s.id)
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
	if c.retired && len(c.streams) == 0 && !c.dead {
		go c.fail(errors.New("http2: connection closed"))
	}
}

// endStream ends s with err (nil: its answer complete); a stream whose
// request side is still open is reset (NO_ERROR) unless the server reset
// it.
func (c *h2Conn) endStream(s *h2Stream, err error, reset bool) {
	c.mu.Lock()
	if c.streams[s.id] == s {
		c.remove(s)
		if reset && !s.halfEnd && !c.dead {
			c.out = appendRSTStream(c.out, s.id, http2.ErrCodeNo)
			c.flush()
		}
	}
	c.mu.Unlock()
	s.finish(err)
}

func (s *h2Stream) finish(err error) {
	s.mu.Lock()
	if !s.finished {
		s.finished, s.err = true, err
		close(s.done)
	}
	s.mu.Unlock()
}

// fail ends c and every stream on it with err.
func (c *h2Conn) fail(err error) {
	c.mu.Lock()
	if c.dead {
		c.mu.Unlock()
		return
	}
	c.dead = true
	if c.err == nil {
		c.err = err
	}
	streams := c.streams
	c.streams = map[uint32]*h2Stream{}
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
	c.mu.Unlock()
	close(c.quit)
	c.nc.Close()
	for _, s := range streams {
		s.finish(err)
	}
}
