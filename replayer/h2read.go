package replayer

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The direct HTTP/2 client's reader goroutine (h2conn.go): frames read with
// http2.Framer, answers handed to their streams.

func (c *h2Conn) readLoop() {
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				c.streamFailed(se.StreamID, se, true)
				continue
			}
			c.fail(fmt.Errorf("http2: reading from the server: %w", err))
			return
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			c.onHeaders(f)
		case *http2.DataFrame:
			c.onData(f)
		case *http2.SettingsFrame:
			c.onSettings(f)
		case *http2.WindowUpdateFrame:
			c.onWindowUpdate(f)
		case *http2.PingFrame:
			if !f.IsAck() {
				c.mu.Lock()
				c.out = appendFrameHeader(c.out, 8, http2.FramePing, http2.FlagPingAck, 0)
				c.out = append(c.out, f.Data[:]...)
				c.flush()
				c.mu.Unlock()
			}
		case *http2.RSTStreamFrame:
			err := error(h2ResetError{f.StreamID, f.ErrCode})
			if f.ErrCode == http2.ErrCodeRefusedStream {
				err = errUnprocessed
			}
			c.streamFailed(f.StreamID, err, false)
		case *http2.GoAwayFrame:
			c.onGoAway(f)
		case *http2.PushPromiseFrame:
			c.fail(errors.New("http2: the server pushed, which this client disabled"))
			return
		}
	}
}

func (c *h2Conn) stream(id uint32) *h2Stream {
	c.mu.Lock()
	s := c.streams[id]
	c.mu.Unlock()
	return s
}

func (c *h2Conn) streamFailed(id uint32, err error, reset bool) {
	if s := c.stream(id); s != nil {
		c.endStream(s, err, reset)
	}
}

// onHeaders takes a stream's answer headers, or its trailers.
func (c *h2Conn) onHeaders(f *http2.MetaHeadersFrame) {
	s := c.stream(f.StreamID)
	if s == nil {
		return
	}
	var err error
	s.mu.Lock()
	switch {
	case s.abandoned || s.finished:
	case s.header == nil:
		code, aerr := strconv.Atoi(f.PseudoValue("status"))
		switch {
		case aerr != nil || code < 100 || code > 999:
			err = fmt.Errorf("http2: malformed :status %q", f.PseudoValue("status"))
		case code < 200 && !f.StreamEnded():
			// informational: the answer follows
		default:
			s.status, s.header = code, headerOf(f.RegularFields())
			if s.tap != nil {
				s.tap.headerOf(s.header)
				if s.grpc {
					s.tap.keepMessages()
				}
				if !s.open {
					// A call the recording client ended itself is compared
					// by its status alone (grpcSample).
					s.w = s.tap
				}
			}
		}
	default:
		s.trailer = headerOf(f.RegularFields())
	}
	s.mu.Unlock()
	if err != nil || f.StreamEnded() {
		c.endStream(s, err, true)
	}
}

func headerOf(fs []hpack.HeaderField) http.Header {
	h := make(http.Header, len(fs))
	for _, f := range fs {
		k := http.CanonicalHeaderKey(f.Name)
		h[k] = append(h[k], f.Value)
	}
	return h
}

// onData takes a stream's body bytes, acknowledging them.
func (c *h2Conn) onData(f *http2.DataFrame) {
	n := int64(f.Length)
	c.mu.Lock()
	s := c.streams[f.StreamID]
	c.recv += n
	if c.recv >= h2ConnWindow/2 {
		c.out = appendWindowUpdate(c.out, 0, uint32(c.recv))
		c.recv = 0
		c.flush()
	}
	if s != nil && !f.StreamEnded() {
		s.recv += n
		if s.recv >= h2StreamWindow/2 {
			c.out = appendWindowUpdate(c.out, s.id, uint32(s.recv))
			s.recv = 0
			c.flush()
		}
	}
	c.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	if !s.abandoned && !s.finished {
		d := f.Data()
		if s.w != nil {
			s.w.Write(d)
		}
		s.n += int64(len(d))
	}
	s.mu.Unlock()
	if f.StreamEnded() {
		c.endStream(s, nil, true)
	}
}

func (c *h2Conn) onSettings(f *http2.SettingsFrame) {
	if f.IsAck() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	first := !c.settings
	c.settings = true
	if _, ok := f.Value(http2.SettingMaxConcurrentStreams); first && !ok {
		c.max = 1000 // as x/net/http2's transport assumes
	}
	f.ForeachSetting(func(st http2.Setting) error {
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			c.max = int(min(st.Val, 1<<20))
		case http2.SettingInitialWindowSize:
			d := int64(st.Val) - c.initWin
			for _, s := range c.streams {
				s.win += d
			}
			c.initWin = int64(st.Val)
		case http2.SettingMaxFrameSize:
			c.maxFrame = int(st.Val)
		}
		return nil
	})
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
	c.out = appendFrameHeader(c.out, 0, http2.FrameSettings, http2.FlagSettingsAck, 0)
	c.pushBlocked()
}

func (c *h2Conn) onWindowUpdate(f *http2.WindowUpdateFrame) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID == 0 {
		c.sendWin += int64(f.Increment)
	} else if s := c.streams[f.StreamID]; s != nil {
		s.win += int64(f.Increment)
	}
	c.pushBlocked()
}

// onGoAway stops new streams on c and ends those the server did not
// take as unprocessed, to be sent again on another connection.
func (c *h2Conn) onGoAway(f *http2.GoAwayFrame) {
	c.mu.Lock()
	if c.err == nil {
		c.err = fmt.Errorf("http2: the server sent GOAWAY (%v)", f.ErrCode)
	}
	var gone []*h2Stream
	for id, s := range c.streams {
		if id > f.LastStreamID {
			gone = append(gone, s)
		}
	}
	c.mu.Unlock()
	for _, s := range gone {
		c.endStream(s, errUnprocessed, false)
	}
}

// h2ResetError ends a stream the server reset.
type h2ResetError struct {
	id   uint32
	code http2.ErrCode
}

func (e h2ResetError) Error() string {
	return fmt.Sprintf("stream error: stream ID %d; %v; received from peer", e.id, e.code)
}

// resetAtDeadline reports whether err is the server's CANCEL of a call
// past deadline: a gRPC server resets a call at its grpc-timeout, which
// may come before the client's own timer fires; grpc-go's client reads it
// as DEADLINE_EXCEEDED too.
func resetAtDeadline(err error, deadline time.Time) bool {
	var re h2ResetError
	var se http2.StreamError // x/net/http2's transport's (Config.NetHTTP)
	reset := (errors.As(err, &re) && re.code == http2.ErrCodeCancel) || (errors.As(err, &se) && se.Code == http2.ErrCodeCancel)
	return reset && !deadline.After(time.Now())
}
