package snapshots

import (
	"encoding/binary"
	"time"
)

// upstreamFlags returns the record flags of r's upstream counts.
func upstreamFlags(r *Result) byte {
	var f byte
	if r.UpstreamCounted {
		f |= flagUpstreamCounted
	}
	if len(r.Upstream) > 0 {
		f |= flagUpstream
	}
	return f
}

// appendUpstream appends the upstream counts, when there are some (see
// runcodec.go for the layout).
func (enc *resultEncoder) appendUpstream(b []byte, counts []UpstreamCount) []byte {
	if len(counts) == 0 {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(counts)))
	for _, c := range counts {
		b = enc.appendStr(b, fewValues, c.Service)
		b = enc.appendStr(b, fewValues, c.Endpoint)
		b = binary.AppendVarint(b, int64(c.Count))
		b = binary.AppendVarint(b, int64(c.Duration))
		b = binary.AppendVarint(b, int64(c.Misses))
	}
	return b
}

// upstream decodes the upstream counts of r.
func (d *resultDecoder) upstream(r *Result) {
	n := d.uvarint()
	// Each count takes five bytes at least: a bad n fails here instead of
	// allocating much.
	if n == 0 || n > uint64(len(d.b)-d.i) {
		d.fail(errShortRecord)
		return
	}
	r.Upstream = make([]UpstreamCount, n)
	for i := range r.Upstream {
		c := &r.Upstream[i]
		c.Service = d.str()
		c.Endpoint = d.str()
		c.Count = int(d.varint())
		c.Duration = time.Duration(d.varint())
		c.Misses = int(d.varint())
	}
}
