package recorder

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"reflect"
	"testing"
)

// ngLayout is how ngFile writes a pcapng capture: the variations of the
// format that FuzzImportPcap's seeds (little-endian, one section, one
// interface, enhanced packet blocks) leave out.
type ngLayout struct {
	bigEndian bool
	pktType   uint32 // ngEnhancedPacket, ngPacketObsolete or ngSimplePacket
	tsresol   byte   // the if_tsresol option; 0: none (microseconds)
	tsoffset  int64  // the if_tsoffset option, in seconds; 0: none
	ifaces    int    // interfaces described per section; packets use the last
	sections  int    // the packets are spread over this many sections
	skipped   bool   // statistics, custom and unknown blocks between packets
}

// ngFile writes the packets of b as a pcapng capture laid out as l.
func ngFile(b *pcapBuilder, l ngLayout) []byte {
	var o binary.AppendByteOrder = binary.LittleEndian
	if l.bigEndian {
		o = binary.BigEndian
	}
	block := func(out []byte, typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(len(body) + 12)
		out = o.AppendUint32(o.AppendUint32(out, typ), n)
		return o.AppendUint32(append(out, body...), n)
	}
	units := uint64(1000000)
	switch {
	case l.tsresol&0x80 != 0:
		units = 1 << (l.tsresol & 0x7f)
	case l.tsresol != 0:
		units = 1
		for range l.tsresol {
			units *= 10
		}
	}
	section := func(out []byte) []byte {
		shb := o.AppendUint32(nil, ngByteOrderMagic)
		shb = o.AppendUint16(o.AppendUint16(shb, 1), 0)
		shb = o.AppendUint64(shb, ^uint64(0))
		out = block(out, ngSectionHeader, shb)
		for i := 0; i < max(l.ifaces, 1); i++ {
			idb := o.AppendUint16(nil, linkEthernet)
			idb = o.AppendUint16(idb, 0)
			idb = o.AppendUint32(idb, 262144)
			if l.tsresol != 0 {
				idb = o.AppendUint16(o.AppendUint16(idb, ngOptionTSResol), 1)
				idb = append(idb, l.tsresol, 0, 0, 0)
			}
			if l.tsoffset != 0 {
				idb = o.AppendUint16(o.AppendUint16(idb, ngOptionTSOffset), 8)
				idb = o.AppendUint64(idb, uint64(l.tsoffset))
			}
			idb = o.AppendUint32(idb, 0) // opt_endofopt
			out = block(out, ngInterface, idb)
		}
		return out
	}
	iface := uint32(max(l.ifaces, 1) - 1)
	per := (len(b.pkts) + max(l.sections, 1) - 1) / max(l.sections, 1)
	var out []byte
	for i, p := range b.pkts {
		if i%per == 0 {
			out = section(out)
		}
		if l.skipped && i%3 == 0 {
			out = block(out, 5, o.AppendUint32(make([]byte, 12), 0))        // interface statistics
			out = block(out, 0x00000bad, []byte("custom block, to skip"))   // custom
			out = block(out, 0x0badf00d, []byte("a type no one knows yet")) // unknown
		}
		d := pcapFrame(linkEthernet, p.ip)
		if l.pktType == ngSimplePacket {
			out = block(out, ngSimplePacket, append(o.AppendUint32(nil, uint32(len(d))), d...))
			continue
		}
		sec := uint64(p.ts.Unix() - l.tsoffset)
		ts := sec*units + uint64(p.ts.Nanosecond())*units/1e9
		var pb []byte
		if l.pktType == ngPacketObsolete {
			pb = o.AppendUint16(o.AppendUint16(nil, uint16(iface)), 7) // interface, drops
		} else {
			pb = o.AppendUint32(nil, iface)
		}
		pb = o.AppendUint32(o.AppendUint32(pb, uint32(ts>>32)), uint32(ts))
		pb = o.AppendUint32(o.AppendUint32(pb, uint32(len(d))), uint32(len(d)))
		out = block(out, l.pktType, append(pb, d...))
	}
	return out
}

// FuzzImportPcapng is FuzzImportPcap seeded with pcapng captures only, in
// every block layout the reader knows: both byte orders; enhanced, simple
// and obsolete packet blocks; if_tsresol in powers of 10 and 2; if_tsoffset;
// several interfaces and sections; blocks to skip. Besides what
// FuzzImportPcap checks, the gzipped capture imports to the same exchanges
// (by ID), statistics and error.
func FuzzImportPcapng(f *testing.F) {
	b, want := pcapScenario(f, "10.0.0.1:40000", "10.0.0.3:40001", "10.0.0.4:40002", "10.0.0.2:8080")
	for _, l := range []ngLayout{
		{pktType: ngEnhancedPacket},
		{pktType: ngEnhancedPacket, bigEndian: true, tsresol: 9, ifaces: 2, skipped: true},
		{pktType: ngPacketObsolete, tsresol: 0x80 | 20, tsoffset: 1 << 20, ifaces: 2, sections: 2},
		{pktType: ngSimplePacket, bigEndian: true, sections: 3, skipped: true},
		{pktType: ngEnhancedPacket, tsresol: 3, ifaces: 3, sections: 2},
	} {
		data := ngFile(b, l)
		sink := &pcapSink{}
		st, err := ImportPcap(context.Background(), bytes.NewReader(data), sink, PcapConfig{})
		if err != nil || st.Format != "pcapng" || len(sink.exchanges) != len(want) {
			f.Fatalf("seed %+v: %d exchanges (want %d), format %q, %v", l, len(sink.exchanges), len(want), st.Format, err)
		}
		f.Add(data)
	}
	const limit = 64
	f.Fuzz(func(t *testing.T, data []byte) {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		zw.Write(data)
		zw.Close()
		for _, ports := range [][]int{nil, {8080}} {
			cfg := PcapConfig{Ports: ports, BodyLimit: limit}
			sink, zsink := &pcapSink{}, &pcapSink{}
			st, err := ImportPcap(context.Background(), bytes.NewReader(data), sink, cfg)
			if err != nil {
				msg := err.Error()
				if bytes.Contains([]byte(msg), []byte("internal error")) || !bytes.HasPrefix([]byte(msg), []byte("import pcap: ")) || bytes.ContainsAny([]byte(msg), "\r\n") {
					t.Fatalf("bad error: %q", msg)
				}
			}
			checkImported(t, sink, st, err == nil, limit)
			if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
				continue // already gzipped: gzipping it again gives another file
			}
			zst, zerr := ImportPcap(context.Background(), bytes.NewReader(z.Bytes()), zsink, cfg)
			if (err == nil) != (zerr == nil) || err != nil && zerr.Error() != err.Error() {
				t.Fatalf("plain: %v; gzipped: %v", err, zerr)
			}
			// Connections end in map order when the capture does: the
			// exchanges' IDs, not the order they are written in, are the
			// order of the requests.
			if !reflect.DeepEqual(sink.sorted(), zsink.sorted()) {
				t.Fatalf("plain and gzipped captures give different exchanges:\n%+v\n%+v", sink.exchanges, zsink.exchanges)
			}
			zst.Format = st.Format
			if !reflect.DeepEqual(zst, st) {
				t.Fatalf("plain and gzipped captures give different stats:\n%+v\n%+v", st, zst)
			}
		}
	})
}
