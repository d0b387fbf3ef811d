package pgwire

import (
	"encoding/binary"
	"fmt"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// maxMessageBody is the largest message body accepted, as PostgreSQL's own
// limit (1 GiB less one byte); a larger length is taken for garbage.
const maxMessageBody = 0x3fffffff - 4

// handler is told about the messages of one direction of a connection.
type handler interface {
	// want returns how many bytes of a message body of type typ and length
	// n to keep for message (0 for none).
	want(typ byte, n int) int
	// message handles a complete message: typ, the first want bytes of its
	// body and the body's full length n. body is valid only during the call.
	message(typ byte, body []byte, n int) error
}

// framer splits one direction's byte stream into typed messages (type byte,
// 4-byte length, body) without copying what it does not decode: a message
// that lies wholly in one chunk is handed over in place, and only the kept
// prefix of one that straddles chunks is accumulated.
type framer struct {
	hdr  [5]byte
	hdrN int // header bytes seen of the current message; 5 once in the body

	typ  byte
	n    int    // body length of the current message
	got  int    // body bytes seen
	keep int    // body bytes to keep
	acc  []byte // the kept bytes, while straddling chunks
}

// feed consumes the chunk b and calls h for every message it completes.
func (f *framer) feed(b []byte, h handler) error {
	for len(b) > 0 {
		if f.hdrN == 0 && len(b) >= 5 {
			// Fast path: a whole header, maybe a whole message, in b.
			typ := b[0]
			length := int(int32(binary.BigEndian.Uint32(b[1:5])))
			if length < 4 || length-4 > maxMessageBody {
				return sqlcore.Malformedf("message %s: bad length %d", msgName(typ), length)
			}
			n := length - 4
			if len(b)-5 >= n {
				keep := h.want(typ, n)
				if err := h.message(typ, b[5:5+keep], n); err != nil {
					return err
				}
				b = b[5+n:]
				continue
			}
			f.start(typ, n, h)
			b = b[5:]
			continue
		}
		if f.hdrN < 5 {
			k := copy(f.hdr[f.hdrN:], b)
			f.hdrN += k
			b = b[k:]
			if f.hdrN < 5 {
				return nil
			}
			length := int(int32(binary.BigEndian.Uint32(f.hdr[1:5])))
			if length < 4 || length-4 > maxMessageBody {
				return sqlcore.Malformedf("message %s: bad length %d", msgName(f.hdr[0]), length)
			}
			f.start(f.hdr[0], length-4, h)
			if f.n == 0 {
				if err := f.finish(h); err != nil {
					return err
				}
				continue
			}
		}
		// In a body.
		k := min(f.n-f.got, len(b))
		if f.got < f.keep {
			f.acc = append(f.acc, b[:min(k, f.keep-f.got)]...)
		}
		f.got += k
		b = b[k:]
		if f.got == f.n {
			if err := f.finish(h); err != nil {
				return err
			}
		}
	}
	return nil
}

func (f *framer) start(typ byte, n int, h handler) {
	f.typ = typ
	f.n = n
	f.got = 0
	f.keep = h.want(typ, n)
	f.acc = f.acc[:0]
	f.hdrN = 5
}

func (f *framer) finish(h handler) error {
	f.hdrN = 0
	err := h.message(f.typ, f.acc, f.n)
	if cap(f.acc) > 1<<16 {
		f.acc = nil // don't keep a large buffer for a rare large message
	}
	return err
}

// partial reports whether the stream stopped inside a message.
func (f *framer) partial() bool { return f.hdrN > 0 }

func msgName(typ byte) string {
	if typ >= 0x20 && typ < 0x7f {
		return fmt.Sprintf("'%c'", typ)
	}
	return fmt.Sprintf("0x%02x", typ)
}
