// Package h2wire decodes an HTTP/2 connection seen from the side, as a
// packet capture holds it: both directions' bytes, in pieces, with their
// times, become stream events (headers, data, trailers, resets). Frames are
// golang.org/x/net/http2's (Framer, with HPACK through
// golang.org/x/net/http2/hpack); this package only feeds them bytes as they
// come and keeps each direction's HPACK state.
//
// It does not take part in the connection (no SETTINGS acknowledged, no
// flow control): it reads. A gap in either direction (bytes the capture
// lost) ends the decoding, since every header block after it depends on
// the HPACK state the lost bytes changed: Conn.Broken says so, and the
// streams in flight are ended with it.
//
// gRPC's message layer above it is package grpcwire's.
package h2wire

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Preface is what an HTTP/2 client sends first (RFC 9113 §3.4).
const Preface = http2.ClientPreface

// maxFrame bounds a frame's payload (the largest SETTINGS_MAX_FRAME_SIZE).
const maxFrame = 1<<24 - 1

// maxHeaderList bounds a decoded header block.
const maxHeaderList = 1 << 20

// Handler receives a connection's stream events, in the order of the bytes.
type Handler interface {
	// Headers is a header block of stream id: a request's (client, first),
	// a response's (":status"), or trailers (a second block).
	Headers(id uint32, client bool, fields []hpack.HeaderField, end bool, t time.Time)
	// Data is a piece of stream id's body (padding removed).
	Data(id uint32, client bool, data []byte, end bool, t time.Time)
	// Reset is a RST_STREAM for stream id.
	Reset(id uint32, client bool, code http2.ErrCode, t time.Time)
}

// Conn is one HTTP/2 connection being decoded.
type Conn struct {
	h      Handler
	sides  [2]side // 0: server → client, 1: client → server
	broken error
}

type side struct {
	buf     bytes.Buffer
	framer  *http2.Framer
	preface bool // the client's preface has been read
}

// NewConn returns a decoder that tells h what the connection carries.
func NewConn(h Handler) *Conn {
	c := &Conn{h: h}
	for i := range c.sides {
		s := &c.sides[i]
		s.framer = http2.NewFramer(nil, &s.buf)
		s.framer.SetMaxReadFrameSize(maxFrame)
		s.framer.MaxHeaderListSize = maxHeaderList
		s.framer.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	}
	c.sides[0].preface = true // the server sends none
	return c
}

// ErrGap is wrapped by Broken after a gap in a direction.
var ErrGap = errors.New("bytes of the HTTP/2 connection were lost")

// Broken returns why decoding stopped, or nil.
func (c *Conn) Broken() error { return c.broken }

// Gap tells the decoder that bytes of a direction were lost: decoding
// stops.
func (c *Conn) Gap(client bool) {
	if c.broken == nil {
		c.broken = fmt.Errorf("%w (%s side)", ErrGap, sideName(client))
	}
}

func sideName(client bool) string {
	if client {
		return "client"
	}
	return "server"
}

// Feed gives the decoder the next bytes of a direction, captured at t.
func (c *Conn) Feed(client bool, b []byte, t time.Time) {
	if c.broken != nil {
		return
	}
	s := &c.sides[0]
	if client {
		s = &c.sides[1]
	}
	s.buf.Write(b)
	if !s.preface {
		if s.buf.Len() < len(Preface) {
			if !strings.HasPrefix(Preface, s.buf.String()) {
				c.broken = errors.New("the client did not start with the HTTP/2 preface")
			}
			return
		}
		if string(s.buf.Next(len(Preface))) != Preface {
			c.broken = errors.New("the client did not start with the HTTP/2 preface")
			return
		}
		s.preface = true
	}
	for c.broken == nil && whole(s.buf.Bytes()) {
		f, err := s.framer.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.h.Reset(se.StreamID, client, se.Code, t) // a malformed header block of one stream
				continue
			}
			c.broken = fmt.Errorf("%s side: %w", sideName(client), err)
			return
		}
		c.frame(f, client, t)
	}
	if s.buf.Len() == 0 {
		s.buf.Reset() // let go of a large buffer's growth
	}
}

// whole reports whether b starts with a whole frame, or a whole header
// block: a HEADERS (or PUSH_PROMISE) frame without END_HEADERS is read
// with the CONTINUATION frames that follow it, all at once.
func whole(b []byte) bool {
	for {
		if len(b) < 9 {
			return false
		}
		n := int(b[0])<<16 | int(b[1])<<8 | int(b[2])
		if len(b) < 9+n {
			return false
		}
		typ, flags := http2.FrameType(b[3]), http2.Flags(b[4])
		open := (typ == http2.FrameHeaders || typ == http2.FramePushPromise || typ == http2.FrameContinuation) &&
			!flags.Has(http2.FlagHeadersEndHeaders)
		if !open {
			return true
		}
		b = b[9+n:]
	}
}

func (c *Conn) frame(f http2.Frame, client bool, t time.Time) {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		c.h.Headers(f.StreamID, client, f.Fields, f.StreamEnded(), t)
	case *http2.DataFrame:
		c.h.Data(f.StreamID, client, f.Data(), f.StreamEnded(), t)
	case *http2.RSTStreamFrame:
		c.h.Reset(f.StreamID, client, f.ErrCode, t)
	}
	// SETTINGS, PING, WINDOW_UPDATE, PRIORITY, GOAWAY, PUSH_PROMISE: nothing
	// a recording keeps.
}
