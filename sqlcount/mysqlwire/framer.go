package mysqlwire

// maxPayload is the largest payload of one packet; a packet that long is
// continued by the next (MySQL's 16 MB split).
const maxPayload = 1<<24 - 1

// handler is told about the packets of one direction of a connection.
type handler interface {
	// want returns how many bytes of a payload of length n, with sequence
	// number seq, to keep for packet (0 for none).
	want(seq byte, n int) int
	// packet handles a complete packet: its sequence number, the first want
	// bytes of its payload, the payload's full length n, and whether it
	// continues the one before (a split packet). body is valid only during
	// the call.
	packet(seq byte, body []byte, n int, cont bool) error
}

// framer splits one direction's byte stream into packets (3-byte length,
// sequence number, payload) without copying what it does not decode: a
// packet that lies wholly in one chunk is handed over in place, and only
// the kept prefix of one that straddles chunks is accumulated. It keeps
// nothing of the payloads between calls.
type framer struct {
	hdr  [4]byte
	hdrN int // header bytes seen of the current packet; 4 once in the payload

	seq  byte
	n    int    // payload length of the current packet
	got  int    // payload bytes seen
	keep int    // payload bytes to keep
	acc  []byte // the kept bytes, while straddling chunks
	cont bool   // the current packet continues a split one
	next bool   // the packet after the current one continues it
}

// feed consumes the chunk b and calls h for every packet it completes.
func (f *framer) feed(b []byte, h handler) error {
	for len(b) > 0 {
		if f.hdrN == 0 && len(b) >= 4 {
			// Fast path: a whole header, maybe a whole packet, in b.
			n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
			seq := b[3]
			f.cont, f.next = f.next, n == maxPayload
			if len(b)-4 >= n {
				keep := h.want(seq, n)
				if err := h.packet(seq, b[4:4+keep], n, f.cont); err != nil {
					return err
				}
				b = b[4+n:]
				continue
			}
			f.start(seq, n, h)
			b = b[4:]
			continue
		}
		if f.hdrN < 4 {
			k := copy(f.hdr[f.hdrN:], b)
			f.hdrN += k
			b = b[k:]
			if f.hdrN < 4 {
				return nil
			}
			n := int(f.hdr[0]) | int(f.hdr[1])<<8 | int(f.hdr[2])<<16
			f.cont, f.next = f.next, n == maxPayload
			f.start(f.hdr[3], n, h)
			if f.n == 0 {
				if err := f.finish(h); err != nil {
					return err
				}
				continue
			}
		}
		// In a payload.
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

func (f *framer) start(seq byte, n int, h handler) {
	f.seq = seq
	f.n = n
	f.got = 0
	f.keep = h.want(seq, n)
	f.acc = f.acc[:0]
	f.hdrN = 4
}

func (f *framer) finish(h handler) error {
	f.hdrN = 0
	err := h.packet(f.seq, f.acc, f.n, f.cont)
	if cap(f.acc) > 1<<16 {
		f.acc = nil // don't keep a large buffer for a rare large packet
	}
	return err
}

// partial reports whether the stream stopped inside a packet.
func (f *framer) partial() bool { return f.hdrN > 0 }
