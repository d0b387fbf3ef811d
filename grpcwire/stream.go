package grpcwire

import (
	"errors"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Stream turns one side of a call, as its bytes pass, into the messages a
// snapshot keeps: each with its time, decompressed. It holds at most Keep
// bytes of each message (and of the whole side, with Budget), so a long
// stream costs bounded memory. It is not safe for concurrent use; one
// side's bytes arrive on one goroutine.
type Stream struct {
	// From is the side: snapshots.FromClient or snapshots.FromServer.
	From snapshots.Sender
	// Start is the exchange's start; a message's Offset is from it.
	Start time.Time
	// Encoding is the side's grpc-encoding (its header), "" for none.
	Encoding string
	// Keep bounds the bytes kept of one message (decompressed); zero
	// keeps every byte.
	Keep int
	// Budget bounds the bytes kept of all of the side's messages; past
	// it, messages are kept with their sizes but no data. Zero: no bound.
	Budget int64
	// Now gives the time; nil is time.Now.
	Now func() time.Time

	split Splitter
	msgs  []snapshots.Message
	kept  int64
	wire  int64
	err   error
}

// Write feeds bytes of the side as they pass; it never fails.
func (s *Stream) Write(p []byte) (int, error) {
	if s.split.Keep == 0 && s.Keep > 0 {
		// A compressed message is kept whole up to its own bound: it is
		// decompressed, then cut at Keep.
		s.split.Keep = max(s.Keep, 64<<10)
	}
	s.wire += int64(len(p))
	s.split.Write(p)
	var now time.Time
	for {
		piece, ok := s.split.Next()
		if !ok {
			break
		}
		if now.IsZero() {
			now = s.now()
		}
		s.add(piece, now)
	}
	return len(p), nil
}

func (s *Stream) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// add keeps one whole message.
func (s *Stream) add(p Piece, at time.Time) {
	m := snapshots.Message{From: s.From, Compressed: p.Compressed, Size: p.Size}
	if !s.Start.IsZero() {
		m.Offset = at.Sub(s.Start)
	}
	data := p.Data
	if p.Compressed {
		whole := int64(len(p.Data)) == p.Size
		out, size, err := Decompress(s.Encoding, p.Data, s.Keep)
		switch {
		case errors.Is(err, ErrUnknownEncoding):
			m.Encoding = s.Encoding // kept as sent
		case err != nil && whole:
			s.err = err // a whole message that does not decode: kept as sent
			m.Encoding = s.Encoding
		case err != nil:
			// Kept in part: what decodes of it, marked cut.
			data, m.Size = out, max(int64(len(out))+1, p.Size)
		default:
			data, m.Size = out, size
		}
	}
	if s.Keep > 0 && len(data) > s.Keep {
		data = data[:s.Keep]
	}
	if s.Budget > 0 && s.kept+int64(len(data)) > s.Budget {
		data = data[:max(0, s.Budget-s.kept)]
	}
	s.kept += int64(len(data))
	if len(data) > 0 {
		m.Data = append([]byte(nil), data...)
	}
	s.msgs = append(s.msgs, m)
}

// Messages returns the messages whole so far, in order.
func (s *Stream) Messages() []snapshots.Message { return s.msgs }

// WireBytes counts the bytes written: the side's body size on the wire.
func (s *Stream) WireBytes() int64 { return s.wire }

// Err says why the side is not a stream of messages (a bad prefix, a
// message that does not decompress), or that it ended inside a message
// (after Close); nil when it is.
func (s *Stream) Err() error {
	if err := s.split.Err(); err != nil {
		return err
	}
	return s.err
}

// Close ends the side; a message begun and not ended is an error.
func (s *Stream) Close() error {
	if s.split.Pending() && s.err == nil && s.split.Err() == nil {
		s.err = errCutShort
	}
	return s.Err()
}

var errCutShort = errors.New("grpc stream ended inside a message")
