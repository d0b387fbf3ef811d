package grpcwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// PrefixSize is the size of a message's prefix: a compressed flag byte and
// a 4-byte big-endian length.
const PrefixSize = 5

// MaxMessageSize is the largest length a prefix may give that this package
// accepts (gRPC's limit is 2^32-1; its servers default to 4 MiB).
const MaxMessageSize = 1<<31 - 1

// ErrBadFlag is returned for a prefix whose flag byte is neither 0 nor 1.
var ErrBadFlag = errors.New("grpc message: compressed flag is neither 0 nor 1")

// ErrTooLarge is returned for a message longer than a reader's limit.
var ErrTooLarge = errors.New("grpc message: larger than the limit")

// Frame is one length-prefixed message as it travels: its flag and its
// bytes, still compressed when Compressed is set.
type Frame struct {
	// Compressed is the prefix's flag: Data is compressed with the
	// stream's grpc-encoding.
	Compressed bool
	// Data is the message's bytes.
	Data []byte
}

// AppendFrame appends data with its prefix to dst.
func AppendFrame(dst []byte, data []byte, compressed bool) []byte {
	var flag byte
	if compressed {
		flag = 1
	}
	dst = append(dst, flag)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(data)))
	return append(dst, data...)
}

// ParsePrefix reads a prefix: the flag and the message's length.
func ParsePrefix(p []byte) (compressed bool, length uint32, err error) {
	if len(p) < PrefixSize {
		return false, 0, io.ErrUnexpectedEOF
	}
	switch p[0] {
	case 0:
	case 1:
		compressed = true
	default:
		return false, 0, fmt.Errorf("%w: %#x", ErrBadFlag, p[0])
	}
	return compressed, binary.BigEndian.Uint32(p[1:PrefixSize]), nil
}

// ReadFrame reads one message from r, at most max bytes long (0 means
// MaxMessageSize). At the end of r it returns io.EOF, and
// io.ErrUnexpectedEOF when r ends inside a message.
func ReadFrame(r io.Reader, max int) (Frame, error) {
	var p [PrefixSize]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return Frame{}, err
	}
	compressed, n, err := ParsePrefix(p[:])
	if err != nil {
		return Frame{}, err
	}
	if max <= 0 {
		max = MaxMessageSize
	}
	if int64(n) > int64(max) {
		return Frame{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return Frame{Compressed: compressed, Data: data}, nil
}

// Splitter cuts a stream that arrives in pieces (HTTP/2 DATA frames, TCP
// segments) into messages, without holding more than Keep bytes of any:
// a recorder taps the bytes it forwards, and never waits for a whole
// message before passing them on.
type Splitter struct {
	// Keep is how many bytes of each message are kept; zero keeps them
	// whole (up to MaxMessageSize).
	Keep int

	prefix [PrefixSize]byte
	have   int   // bytes of the prefix read
	left   int64 // bytes of the current message still to come
	cur    Piece // the message being read
	done   []Piece
	err    error
}

// Piece is a message the Splitter cut: its flag, its first Keep bytes and
// its full length.
type Piece struct {
	Compressed bool
	// Data is the message's first bytes, at most Splitter.Keep.
	Data []byte
	// Size is the message's full length on the wire, its prefix left out.
	Size int64
}

// Write feeds p to the splitter. It never fails; a stream that is not
// length-prefixed messages sets Err and the rest is ignored.
func (s *Splitter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 && s.err == nil {
		if s.left == 0 && s.have < PrefixSize {
			c := copy(s.prefix[s.have:], p)
			s.have += c
			p = p[c:]
			if s.have < PrefixSize {
				break
			}
			compressed, size, err := ParsePrefix(s.prefix[:])
			if err != nil {
				s.err = err
				break
			}
			s.cur = Piece{Compressed: compressed, Size: int64(size)}
			s.left = int64(size)
			if size == 0 {
				s.finish()
			}
			continue
		}
		take := int(min(int64(len(p)), s.left))
		if room := s.room(); room > 0 {
			s.cur.Data = append(s.cur.Data, p[:min(take, room)]...)
		}
		p = p[take:]
		s.left -= int64(take)
		if s.left == 0 {
			s.finish()
		}
	}
	return n, nil
}

// room is how many more bytes of the current message are kept.
func (s *Splitter) room() int {
	keep := s.Keep
	if keep <= 0 {
		keep = MaxMessageSize
	}
	return keep - len(s.cur.Data)
}

func (s *Splitter) finish() {
	s.done = append(s.done, s.cur)
	s.cur, s.have = Piece{}, 0
}

// Next returns the next whole message cut so far, and false when there is
// none yet.
func (s *Splitter) Next() (Piece, bool) {
	if len(s.done) == 0 {
		return Piece{}, false
	}
	p := s.done[0]
	s.done = s.done[1:]
	if len(s.done) == 0 {
		s.done = s.done[:0:0]
	}
	return p, true
}

// Pending reports whether a message has begun but not ended: at the end of
// the stream, it was cut short.
func (s *Splitter) Pending() bool { return s.have > 0 || s.left > 0 }

// Err returns why the stream is not length-prefixed messages, or nil.
func (s *Splitter) Err() error { return s.err }
