package snapshots

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// A snapshot stores an exchange's messages in one BLOB (column messages):
// a format byte, a byte of flags (1: a client message was cut, 2: a server
// message was cut; Snapshot.Index reads it in SQL), then for each message
// its sender ('c' or 's'), a flags
// byte (1: compressed on the wire), the offset in nanoseconds (varint), the
// full size (uvarint), the encoding (uvarint length, bytes) and the data
// (uvarint length, bytes).
const messagesFormat = 1

// Flags of the messages column and of a message.
const (
	cutClient      = 1
	cutServer      = 2
	flagCompressed = 1
)

// MarshalMessages encodes ms as a snapshot stores them (nil for none), for
// another store of exchanges (a replay's spool) to use the same form.
func MarshalMessages(ms []Message) []byte { return encodeMessages(ms) }

// UnmarshalMessages decodes what MarshalMessages encoded; the messages
// share no memory with b.
func UnmarshalMessages(b []byte) ([]Message, error) { return decodeMessages(b) }

// encodeMessages encodes ms for the messages column; nil for none.
func encodeMessages(ms []Message) []byte {
	if len(ms) == 0 {
		return nil
	}
	n := 2
	for i := range ms {
		n += 2 + 3*binary.MaxVarintLen64 + len(ms[i].Encoding) + len(ms[i].Data)
	}
	b := make([]byte, 2, n)
	b[0] = messagesFormat
	if messagesCut(ms, FromClient) {
		b[1] |= cutClient
	}
	if messagesCut(ms, FromServer) {
		b[1] |= cutServer
	}
	for i := range ms {
		m := &ms[i]
		from := byte('c')
		if m.From == FromServer {
			from = 's'
		}
		var flags byte
		if m.Compressed {
			flags |= flagCompressed
		}
		b = append(b, from, flags)
		b = binary.AppendVarint(b, int64(m.Offset))
		b = binary.AppendUvarint(b, uint64(max(m.Size, 0)))
		b = binary.AppendUvarint(b, uint64(len(m.Encoding)))
		b = append(b, m.Encoding...)
		b = binary.AppendUvarint(b, uint64(len(m.Data)))
		b = append(b, m.Data...)
	}
	return b
}

var errBadMessages = errors.New("bad messages column")

// decodeMessages reverses encodeMessages. The messages' data share no
// memory with b.
func decodeMessages(b []byte) ([]Message, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != messagesFormat {
		return nil, fmt.Errorf("%w: format %d", errBadMessages, b[0])
	}
	if len(b) < 2 {
		return nil, errBadMessages
	}
	b = b[2:]
	var ms []Message
	for len(b) > 0 {
		if len(b) < 2 {
			return nil, errBadMessages
		}
		var m Message
		switch b[0] {
		case 'c':
			m.From = FromClient
		case 's':
			m.From = FromServer
		default:
			return nil, fmt.Errorf("%w: sender %q", errBadMessages, b[0])
		}
		m.Compressed = b[1]&flagCompressed != 0
		b = b[2:]
		off, n := binary.Varint(b)
		if n <= 0 {
			return nil, errBadMessages
		}
		m.Offset, b = time.Duration(off), b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > 1<<62 {
			return nil, errBadMessages
		}
		m.Size, b = int64(size), b[n:]
		enc, rest, ok := lengthPrefixed(b)
		if !ok {
			return nil, errBadMessages
		}
		m.Encoding = string(enc)
		data, rest, ok := lengthPrefixed(rest)
		if !ok {
			return nil, errBadMessages
		}
		if len(data) > 0 {
			m.Data = append([]byte(nil), data...)
		}
		b = rest
		ms = append(ms, m)
	}
	return ms, nil
}

// lengthPrefixed splits a uvarint length and that many bytes off b.
func lengthPrefixed(b []byte) (v, rest []byte, ok bool) {
	l, n := binary.Uvarint(b)
	if n <= 0 || l > uint64(len(b)-n) {
		return nil, nil, false
	}
	return b[n : n+int(l)], b[n+int(l):], true
}
