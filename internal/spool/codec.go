package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// A batch is its count, then each exchange's fields in the order of
// snapshots.Exchange: integers as varints, strings and bodies as their
// length and bytes (a body's length plus one, 0 for nil), a time as unix
// nanoseconds (0 for none) and a header as its size in bytes plus one (0
// for nil), then its number of keys and each key and its values; a gRPC
// call's messages are a body holding them as snapshots.MarshalMessages
// encodes them.
//
// Decoded, nothing shares the batch's buffer: a string kept long after
// the batch (an endpoint counted with a response hash, a template kept for
// the explain phase) would keep the whole buffer alive. The strings few
// exchanges differ in (method, endpoint, service…) are interned; a header
// is one string its keys and values share, as the snapshot's reader does.

// encodeBatch encodes exs.
func encodeBatch(exs []*snapshots.Exchange) []byte {
	b := binary.AppendUvarint(make([]byte, 0, encodedSize(exs)), uint64(len(exs)))
	for _, e := range exs {
		b = binary.AppendVarint(b, e.ID)
		b = appendString(b, string(e.Direction))
		b = appendString(b, e.Protocol)
		b = appendString(b, e.Service)
		var start int64
		if !e.Start.IsZero() {
			start = e.Start.UnixNano()
		}
		b = binary.AppendVarint(b, start)
		b = binary.AppendVarint(b, int64(e.Duration))
		b = appendString(b, e.Method)
		b = appendString(b, e.URL)
		b = appendString(b, e.Proto)
		b = appendHeader(b, e.RequestHeader)
		b = appendBody(b, e.RequestBody)
		b = binary.AppendVarint(b, e.RequestBodySize)
		b = binary.AppendVarint(b, int64(e.Status))
		b = appendHeader(b, e.ResponseHeader)
		b = appendBody(b, e.ResponseBody)
		b = binary.AppendVarint(b, e.ResponseBodySize)
		b = appendString(b, e.Endpoint)
		b = binary.AppendVarint(b, e.ParentID)
		b = appendString(b, e.TraceID)
		b = appendString(b, e.Error)
		b = appendHeader(b, e.ResponseTrailer)
		b = appendBody(b, snapshots.MarshalMessages(e.Messages))
	}
	return b
}

// encodedSize is at least the size of exs encoded, so that encoding them
// allocates once: a varint takes at most 10 bytes.
func encodedSize(exs []*snapshots.Exchange) int {
	n := binary.MaxVarintLen64
	for _, e := range exs {
		n += 20*binary.MaxVarintLen64 + len(e.Direction) + len(e.Protocol) + len(e.Service) + len(e.Method) + len(e.URL) +
			len(e.Proto) + len(e.RequestBody) + len(e.ResponseBody) + len(e.Endpoint) + len(e.TraceID) + len(e.Error) +
			headerSize(e.RequestHeader) + headerSize(e.ResponseHeader) + headerSize(e.ResponseTrailer) + messagesSize(e.Messages)
	}
	return n
}

func messagesSize(ms []snapshots.Message) int {
	n := 2 * binary.MaxVarintLen64
	for _, m := range ms {
		n += 2 + 5*binary.MaxVarintLen64 + len(m.Encoding) + len(m.Data)
	}
	return n
}

func headerSize(h http.Header) int {
	n := 0
	for k, vs := range h {
		n += 2*binary.MaxVarintLen64 + len(k)
		for _, v := range vs {
			n += binary.MaxVarintLen64 + len(v)
		}
	}
	return n
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBody(b, body []byte) []byte {
	if body == nil {
		return append(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(len(body))+1)
	return append(b, body...)
}

func appendHeader(b []byte, h http.Header) []byte {
	if h == nil {
		return append(b, 0)
	}
	var kv []byte
	kv = binary.AppendUvarint(kv, uint64(len(h)))
	for k, vs := range h {
		kv = appendString(kv, k)
		kv = binary.AppendUvarint(kv, uint64(len(vs)))
		for _, v := range vs {
			kv = appendString(kv, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(kv))+1)
	return append(b, kv...)
}

var errCorrupt = errors.New("corrupt")

// interner keeps one copy of each of the strings many exchanges share.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

// maxInterned bounds an interner; past it, strings are copied.
const maxInterned = 1 << 14

// decoder reads a batch, or a header (str set: its strings share str).
type decoder struct {
	buf    []byte
	str    string
	i      int
	err    error
	intern *interner // held locked
}

// decodeBatch decodes a batch encoded by encodeBatch.
func decodeBatch(buf []byte, in *interner) ([]*snapshots.Exchange, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	d := &decoder{buf: buf, intern: in}
	n := d.uint()
	if d.err != nil || n > uint64(len(buf)) {
		return nil, errCorrupt
	}
	exs := make([]*snapshots.Exchange, n)
	all := make([]snapshots.Exchange, n)
	for j := range exs {
		e := &all[j]
		e.ID = d.int()
		e.Direction = snapshots.Direction(d.common())
		e.Protocol = d.common()
		e.Service = d.common()
		if ns := d.int(); ns != 0 {
			e.Start = time.Unix(0, ns).UTC()
		}
		e.Duration = time.Duration(d.int())
		e.Method = d.common()
		e.URL = d.string()
		e.Proto = d.common()
		e.RequestHeader = d.header()
		e.RequestBody = d.body()
		e.RequestBodySize = d.int()
		e.Status = int(d.int())
		e.ResponseHeader = d.header()
		e.ResponseBody = d.body()
		e.ResponseBodySize = d.int()
		e.Endpoint = d.common()
		e.ParentID = d.int()
		e.TraceID = d.string()
		e.Error = d.string()
		e.ResponseTrailer = d.header()
		if ms := d.body(); ms != nil {
			var err error
			if e.Messages, err = snapshots.UnmarshalMessages(ms); err != nil {
				return nil, errCorrupt
			}
		}
		exs[j] = e
	}
	if d.err != nil || d.i != len(buf) {
		return nil, errCorrupt
	}
	return exs, nil
}

func (d *decoder) uint() uint64 {
	v, n := binary.Uvarint(d.buf[d.i:])
	if n <= 0 {
		d.fail()
		return 0
	}
	d.i += n
	return v
}

// int reads a signed varint: zigzag-encoded, as binary.AppendVarint writes.
func (d *decoder) int() int64 {
	u := d.uint()
	return int64(u>>1) ^ -int64(u&1)
}

// bytes returns the next n bytes, or fails.
func (d *decoder) bytes(n uint64) ([]byte, bool) {
	if d.err != nil || n > uint64(len(d.buf)-d.i) {
		d.fail()
		return nil, false
	}
	b := d.buf[d.i : d.i+int(n)]
	d.i += int(n)
	return b, true
}

// string returns the next string: a substring of str for a header's
// decoder, else a copy.
func (d *decoder) string() string {
	b, ok := d.bytes(d.uint())
	if !ok || len(b) == 0 {
		return ""
	}
	if d.str != "" {
		return d.str[d.i-len(b) : d.i]
	}
	return string(b)
}

// common returns the next string, interned.
func (d *decoder) common() string {
	b, ok := d.bytes(d.uint())
	if !ok || len(b) == 0 {
		return ""
	}
	if s, ok := d.intern.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.intern.m == nil {
		d.intern.m = map[string]string{}
	}
	if len(d.intern.m) < maxInterned {
		d.intern.m[s] = s
	}
	return s
}

// block returns the next block written as its length plus one; false
// for none (a nil body or header) or when it fails.
func (d *decoder) block() ([]byte, bool) {
	n := d.uint()
	if n == 0 {
		return nil, false
	}
	return d.bytes(n - 1)
}

// body returns a copy of the next body.
func (d *decoder) body() []byte {
	if b, ok := d.block(); ok {
		return bytes.Clone(b)
	}
	return nil
}

// header decodes the next header: its keys and values share one string.
func (d *decoder) header() http.Header {
	b, ok := d.block()
	if !ok {
		return nil
	}
	hd := &decoder{buf: b, str: string(b)}
	keys := hd.uint()
	if hd.err != nil || keys > uint64(len(b)) {
		d.fail()
		return nil
	}
	h := make(http.Header, keys)
	for range keys {
		k := hd.string()
		nv := hd.uint()
		if hd.err != nil || nv > uint64(len(b)) {
			d.fail()
			return nil
		}
		vs := make([]string, nv)
		for j := range vs {
			vs[j] = hd.string()
		}
		h[k] = vs
	}
	if hd.err != nil || hd.i != len(b) {
		d.fail()
		return nil
	}
	return h
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.i = len(d.buf)
}
