package pbdecode

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// maxDepth bounds how deep Raw looks for messages inside bytes fields.
const maxDepth = 64

// ErrNotMessage is returned for bytes that are not a protobuf message.
var ErrNotMessage = errors.New("not a protobuf message")

// Field is one field of a message as the wire holds it.
type Field struct {
	// Number is the field number.
	Number protowire.Number
	// Type is the wire type: varint, fixed32, fixed64, bytes or group.
	Type protowire.Type
	// Varint holds a varint, fixed32 or fixed64 field's value.
	Varint uint64
	// Bytes holds a bytes field's value (a string, bytes, a message or a
	// packed repeated field: the wire does not say which) and a group's
	// contents.
	Bytes []byte
}

// Fields splits a message into its fields, in wire order.
func Fields(b []byte) ([]Field, error) {
	var out []Field
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: %w", ErrNotMessage, protowire.ParseError(n))
		}
		b = b[n:]
		f := Field{Number: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			f.Varint, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.Varint = uint64(v)
		case protowire.Fixed64Type:
			f.Varint, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.Bytes, n = protowire.ConsumeBytes(b)
		case protowire.StartGroupType:
			f.Bytes, n = protowire.ConsumeGroup(num, b)
		default:
			return nil, fmt.Errorf("%w: field %d has wire type %d", ErrNotMessage, num, typ)
		}
		if n < 0 {
			return nil, fmt.Errorf("%w: field %d: %w", ErrNotMessage, num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// Raw decodes a message without its schema into a JSON-like tree, as
// encoding/json decodes with UseNumber: an object keyed by field number
// ("1", "2", …), a field seen more than once an array of its values.
// Varint, fixed32 and fixed64 values are numbers (unsigned: the wire does
// not say whether a varint is signed, zigzagged or a bool); a bytes field
// is an object when it parses as a message and is not text, a string when
// it is valid UTF-8 text, else its base64; a group is an object.
func Raw(b []byte) (map[string]any, error) { return raw(b, 0) }

func raw(b []byte, depth int) (map[string]any, error) {
	fields, err := Fields(b)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(fields))
	for _, f := range fields {
		k := strconv.FormatUint(uint64(f.Number), 10)
		v := value(f, depth)
		switch prev := out[k].(type) {
		case nil:
			out[k] = v
		case repeated:
			out[k] = append(prev, v)
		default:
			out[k] = repeated{prev, v}
		}
	}
	for k, v := range out {
		if r, ok := v.(repeated); ok {
			out[k] = []any(r)
		}
	}
	return out, nil
}

// repeated marks a value built from repeated fields while decoding, so
// that a field holding an array is not mistaken for one seen twice.
type repeated []any

func value(f Field, depth int) any {
	switch f.Type {
	case protowire.BytesType:
		if isText(f.Bytes) {
			return string(f.Bytes)
		}
		if depth < maxDepth {
			if m, err := raw(f.Bytes, depth+1); err == nil {
				return m
			}
		}
		return base64.StdEncoding.EncodeToString(f.Bytes)
	case protowire.StartGroupType:
		if m, err := raw(f.Bytes, depth+1); err == nil && depth < maxDepth {
			return m
		}
		return base64.StdEncoding.EncodeToString(f.Bytes)
	}
	return json.Number(strconv.FormatUint(f.Varint, 10))
}

// isText reports whether b reads as text: valid UTF-8 without control
// characters other than tab, newline and carriage return. A serialized
// message almost always holds bytes below 0x20 (the tags of fields 1 to
// 3), so text and messages rarely look alike.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
			return false
		}
	}
	return true
}
