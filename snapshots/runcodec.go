package snapshots

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// A run file holds millions of results, written once and read whole in
// order, so they are stored as cheaply to write and to read as we can: a
// row of the results table is a block of up to maxBlockResults results in
// increasing order of Seq, from first to last (a row costs a statement to
// write and a step to read, whatever its size). A block's data is its
// results' records, each preceded by its length as a uvarint. Blocks of
// more than one result never overlap; a result numbered before the last
// block written (late) is a block of its own, which the reader merges in.
//
// A record is packed: times as nanosecond offsets, and the strings that
// repeat (phases, endpoints, methods, errors, SQL fingerprints) interned in
// the strings table and referred to by id. In order (varint: zig-zag, as
// encoding/binary's AppendVarint; str: see appendStr):
//
//	flags          1 byte: flagSQLCounted, flagHexTrace, flagSQLErrors, flagUpstreamCounted, flagUpstream, flagGRPC
//	Seq            varint
//	Phase          str
//	Slice          varint
//	ExchangeID     varint
//	Endpoint       str
//	Method         str
//	URL            str (inline: URLs repeat less, and their table would be big)
//	Intended       varint, ns since the run's base (run_info base_ns)
//	Sent           varint, ns since Intended
//	Done           varint, ns since Sent
//	Status         varint
//	RecordedStatus varint
//	Bytes          varint
//	Error          str
//	TraceID        16 bytes when flagHexTrace (32 lower-case hex digits), else an inline str
//	SQL            uvarint count, then per fingerprint: str Fingerprint, varint Count, varint Duration (ns),
//	               and varint Errors when flagSQLErrors (run file version 2 on; else Errors is zero)
//	Upstream       only when flagUpstream (run file version 3 on): uvarint count, then per service and
//	               endpoint: str Service, str Endpoint, varint Count, varint Duration (ns), varint Misses
//	gRPC           only when flagGRPC (run file version 4 on): varint GRPCStatus, varint RecordedGRPCStatus
//
// A zero time is stored as the Unix time 0, as elsewhere in the files.

// Limits of a block.
const (
	maxBlockResults = 512
	maxBlockBytes   = 16 << 10 // a block ends past this size: it fits a page, no overflow pages
)

// Flags of a packed result.
const (
	flagSQLCounted = 1 << iota
	flagHexTrace
	flagSQLErrors // the SQL counts carry Errors (only set when one is not zero)
	flagUpstreamCounted
	flagUpstream // upstream counts follow the SQL counts (only set when there are some)
)

// resultEncoder packs results; the strings it interns wait in newStrs for
// the writer to store them. A RunWriter's is used under its batcher's lock.
type resultEncoder struct {
	base    int64
	in      *interner
	newStrs []internedStr
	// The phase, endpoint and method packed last: a run's results repeat
	// them (the same strings), so most are packed without a map lookup.
	phase, endpoint, method lastStr
}

// lastStr is a string interned as id.
type lastStr struct {
	s  string
	id int64
}

// appendLast is appendStr for a string that repeats: last remembers it.
func (enc *resultEncoder) appendLast(b []byte, last *lastStr, s string) []byte {
	if last.id != 0 && last.s == s {
		return binary.AppendUvarint(b, uint64(last.id)<<1|1)
	}
	at := len(b)
	b = enc.appendStr(b, fewValues, s)
	if tag, n := binary.Uvarint(b[at:]); n > 0 && tag&1 == 1 {
		*last = lastStr{s: s, id: int64(tag >> 1)}
	}
	return b
}

// appendStr appends s as a uvarint tag: 0 for the empty string, 2·id+1 for
// an interned string, 2·len for one stored inline (followed by its bytes).
func (enc *resultEncoder) appendStr(b []byte, group int, s string) []byte {
	if s == "" {
		return append(b, 0)
	}
	if id, isNew := enc.in.id(group, s); id != 0 {
		if isNew {
			enc.newStrs = append(enc.newStrs, internedStr{id, s})
		}
		return binary.AppendUvarint(b, uint64(id)<<1|1)
	}
	return appendInline(b, s)
}

func appendInline(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s))<<1)
	return append(b, s...)
}

// append appends r's record to b.
func (enc *resultEncoder) append(b []byte, r *Result) []byte {
	var flags byte
	if r.SQLCounted {
		flags |= flagSQLCounted
	}
	sqlErrors := false
	for _, c := range r.SQL {
		sqlErrors = sqlErrors || c.Errors != 0
	}
	if sqlErrors {
		flags |= flagSQLErrors
	}
	flags |= upstreamFlags(r)
	if r.GRPC {
		flags |= flagGRPC
	}
	// flagHexTrace is known once the trace id is packed: the flags byte is
	// set then.
	at := len(b)
	b = append(b, flags)
	b = binary.AppendVarint(b, r.Seq)
	b = enc.appendLast(b, &enc.phase, r.Phase)
	b = binary.AppendVarint(b, int64(r.Slice))
	b = binary.AppendVarint(b, r.ExchangeID)
	b = enc.appendLast(b, &enc.endpoint, r.Endpoint)
	b = enc.appendLast(b, &enc.method, r.Method)
	b = appendInline(b, r.URL)
	intended, sent, done := unixNano(r.Intended), unixNano(r.Sent), unixNano(r.Done)
	b = binary.AppendVarint(b, intended-enc.base)
	b = binary.AppendVarint(b, sent-intended)
	b = binary.AppendVarint(b, done-sent)
	b = binary.AppendVarint(b, int64(r.Status))
	b = binary.AppendVarint(b, int64(r.RecordedStatus))
	b = binary.AppendVarint(b, r.Bytes)
	b = enc.appendStr(b, manyValues, r.Error)
	if nb, ok := appendLowerHex32(b, r.TraceID); ok {
		b = nb
		b[at] |= flagHexTrace
	} else {
		b = appendInline(b, r.TraceID)
	}
	b = binary.AppendUvarint(b, uint64(len(r.SQL)))
	for _, c := range r.SQL {
		b = enc.appendStr(b, fewValues, c.Fingerprint)
		b = binary.AppendVarint(b, int64(c.Count))
		b = binary.AppendVarint(b, int64(c.Duration))
		if sqlErrors {
			b = binary.AppendVarint(b, int64(c.Errors))
		}
	}
	return appendGRPC(enc.appendUpstream(b, r.Upstream), r)
}

// appendLowerHex32 appends the 16 bytes that s spells when s is 32
// lower-case hex digits (a W3C trace id), in one pass over s: a run's trace
// ids were written by another goroutine, so reading them is what costs.
func appendLowerHex32(b []byte, s string) ([]byte, bool) {
	if len(s) != 32 {
		return b, false
	}
	n := len(b)
	for i := 0; i < 32; i += 2 {
		hi, lo := lowerHex[s[i]], lowerHex[s[i+1]]
		if hi|lo > 0xf {
			return b[:n], false
		}
		b = append(b, hi<<4|lo)
	}
	return b, true
}

// lowerHex is the value of each lower-case hex digit, 0xff for any other
// byte.
var lowerHex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range "0123456789abcdef" {
		t[c] = byte(i)
	}
	return t
}()

// errShortRecord reports a record that ends too soon or holds a bad value.
var errShortRecord = errors.New("truncated or malformed record")

// resultDecoder unpacks records. strs holds the string table by id - 1;
// load, called with the first id it lacks, extends it.
type resultDecoder struct {
	base int64
	strs []string
	load func(from int64) ([]string, error)
	b    []byte // the record being decoded
	i    int    // where in b
	err  error

	// Results and SQL counts are carved out of slabs: one allocation for
	// many. A result kept by the caller keeps its slab (a few KB) alive.
	results []Result
	counts  []SQLCount
}

// Slab sizes of resultDecoder.
const (
	resultSlab = 16
	countSlab  = 64
)

func (d *resultDecoder) uvarint() uint64 {
	if d.i < len(d.b) && d.b[d.i] < 0x80 {
		v := uint64(d.b[d.i])
		d.i++
		return v
	}
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		d.fail(errShortRecord)
		return 0
	}
	d.i += n
	return v
}

func (d *resultDecoder) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *resultDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.i = len(d.b)
}

func (d *resultDecoder) str() string {
	tag := d.uvarint()
	if tag&1 == 0 {
		return d.inline(tag >> 1)
	}
	id := tag >> 1
	if id-1 < uint64(len(d.strs)) {
		return d.strs[id-1]
	}
	return d.loadStr(id)
}

// loadStr returns string id, which the table read so far lacks.
func (d *resultDecoder) loadStr(id uint64) string {
	if id == 0 || id > maxInterned {
		d.fail(fmt.Errorf("string id %d out of range", id))
		return ""
	}
	more, err := d.load(int64(len(d.strs)) + 1)
	if err != nil {
		d.fail(fmt.Errorf("strings: %w", err))
		return ""
	}
	d.strs = append(d.strs, more...)
	if id > uint64(len(d.strs)) {
		d.fail(fmt.Errorf("no string %d", id))
		return ""
	}
	return d.strs[id-1]
}

func (d *resultDecoder) inline(n uint64) string {
	if n == 0 {
		return ""
	}
	if n > uint64(len(d.b)-d.i) {
		d.fail(errShortRecord)
		return ""
	}
	s := string(d.b[d.i : d.i+int(n)])
	d.i += int(n)
	return s
}

// decode unpacks a record.
func (d *resultDecoder) decode(data []byte) (*Result, error) {
	d.b, d.i, d.err = data, 0, nil
	if len(d.b) == 0 {
		return nil, fmt.Errorf("empty result record")
	}
	if len(d.results) == 0 {
		d.results = make([]Result, resultSlab)
	}
	r := &d.results[0]
	d.results = d.results[1:]
	flags := d.b[0]
	d.i = 1
	r.Seq = d.varint()
	r.SQLCounted = flags&flagSQLCounted != 0
	r.Phase = d.str()
	r.Slice = int(d.varint())
	r.ExchangeID = d.varint()
	r.Endpoint = d.str()
	r.Method = d.str()
	r.URL = d.str()
	intended := d.base + d.varint()
	sent := intended + d.varint()
	done := sent + d.varint()
	r.Intended, r.Sent, r.Done = fromUnixNano(intended), fromUnixNano(sent), fromUnixNano(done)
	r.Status = int(d.varint())
	r.RecordedStatus = int(d.varint())
	r.Bytes = d.varint()
	r.Error = d.str()
	if flags&flagHexTrace != 0 {
		if len(d.b)-d.i < 16 {
			d.fail(errShortRecord)
		} else {
			var buf [32]byte
			hex.Encode(buf[:], d.b[d.i:d.i+16])
			r.TraceID = string(buf[:])
			d.i += 16
		}
	} else {
		tag := d.uvarint()
		if tag&1 != 0 {
			d.fail(errShortRecord)
		}
		r.TraceID = d.inline(tag >> 1)
	}
	if n := d.uvarint(); n > 0 {
		// Each count takes three bytes at least: a bad n fails here
		// instead of allocating much.
		if n > uint64(len(d.b)-d.i) {
			d.fail(errShortRecord)
		} else {
			if int(n) > len(d.counts) {
				d.counts = make([]SQLCount, max(countSlab, int(n)))
			}
			r.SQL = d.counts[:n:n]
			d.counts = d.counts[n:]
			for i := range r.SQL {
				c := &r.SQL[i]
				c.Fingerprint = d.str()
				c.Count = int(d.varint())
				c.Duration = time.Duration(d.varint())
				if flags&flagSQLErrors != 0 {
					c.Errors = int(d.varint())
				}
			}
		}
	}
	r.UpstreamCounted = flags&flagUpstreamCounted != 0
	if flags&flagUpstream != 0 {
		d.upstream(r)
	}
	if flags&flagGRPC != 0 {
		d.grpc(r)
	}
	if d.err == nil && d.i < len(d.b) {
		d.err = fmt.Errorf("%d bytes after the record", len(d.b)-d.i)
	}
	if d.err != nil {
		return nil, fmt.Errorf("result %d: %w", r.Seq, d.err)
	}
	return r, nil
}

// splitRecord splits the record that starts data (after its length) from
// the records after it, and returns its Seq.
func splitRecord(data []byte) (rec, rest []byte, seq int64, err error) {
	n, k := binary.Uvarint(data)
	if k <= 0 || n < 2 || n > uint64(len(data)-k) {
		return nil, nil, 0, errShortRecord
	}
	rec, rest = data[k:k+int(n)], data[k+int(n):]
	seq, k = binary.Varint(rec[1:])
	if k <= 0 {
		return nil, nil, 0, errShortRecord
	}
	return rec, rest, seq, nil
}

// blockHolds reports whether the block data holds a result numbered seq.
func blockHolds(data []byte, seq int64) (bool, error) {
	for len(data) > 0 {
		_, rest, s, err := splitRecord(data)
		if err != nil || s >= seq {
			return s == seq, err
		}
		data = rest
	}
	return false, nil
}
