package recorder

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"net"
	"net/netip"
	"sort"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/replaykit/replay/snapshots"
)

// pcapBuilder builds synthetic captures: TCP connections whose packets
// carry consistent sequence numbers, written in any link type and format.
type pcapBuilder struct {
	t    testing.TB
	now  time.Time
	pkts []pcapPkt
}

// pcapPkt is an IP packet and when it was captured.
type pcapPkt struct {
	ts time.Time
	ip []byte
}

func newPcapBuilder(t testing.TB) *pcapBuilder {
	return &pcapBuilder{t: t, now: time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)}
}

// add captures packets, one millisecond apart; it returns the time of the
// last.
func (b *pcapBuilder) add(ps ...[]byte) time.Time {
	for _, ip := range ps {
		b.now = b.now.Add(time.Millisecond)
		b.pkts = append(b.pkts, pcapPkt{b.now, ip})
	}
	return b.now
}

// wait lets capture time pass.
func (b *pcapBuilder) wait(d time.Duration) { b.now = b.now.Add(d) }

// pcapConv is one TCP connection being built.
type pcapConv struct {
	b              *pcapBuilder
	cli, srv       netip.AddrPort
	cliSeq, srvSeq uint32 // the next sequence number each side sends
}

// conv starts a connection from cli to srv ("ip:port") without packets.
func (b *pcapBuilder) conv(cli, srv string) *pcapConv {
	return &pcapConv{b: b, cli: netip.MustParseAddrPort(cli), srv: netip.MustParseAddrPort(srv), cliSeq: 1000, srvSeq: 50000}
}

// handshake captures SYN, SYN-ACK and ACK.
func (c *pcapConv) handshake() time.Time {
	syn := c.packet(true, "S", c.cliSeq-1, 0, nil)
	synAck := c.packet(false, "SA", c.srvSeq-1, c.cliSeq, nil)
	ack := c.packet(true, "A", c.cliSeq, c.srvSeq, nil)
	return c.b.add(syn, synAck, ack)
}

// seg builds the next segment of one side without capturing it, advancing
// that side's sequence number.
func (c *pcapConv) seg(fromClient bool, data string) []byte {
	if fromClient {
		p := c.packet(true, "PA", c.cliSeq, c.srvSeq, []byte(data))
		c.cliSeq += uint32(len(data))
		return p
	}
	p := c.packet(false, "PA", c.srvSeq, c.cliSeq, []byte(data))
	c.srvSeq += uint32(len(data))
	return p
}

// client captures segments from the client, one per piece; it returns the
// time of the first (when a request starts).
func (c *pcapConv) client(pieces ...string) time.Time {
	var first time.Time
	for i, d := range pieces {
		t := c.b.add(c.seg(true, d))
		if i == 0 {
			first = t
		}
	}
	return first
}

// server captures segments from the server, one per piece; it returns the
// time of the last (when a response ends).
func (c *pcapConv) server(pieces ...string) time.Time {
	var t time.Time
	for _, d := range pieces {
		t = c.b.add(c.seg(false, d))
	}
	return t
}

// fin captures a FIN from one side.
func (c *pcapConv) fin(fromClient bool) time.Time {
	if fromClient {
		p := c.packet(true, "FA", c.cliSeq, c.srvSeq, nil)
		c.cliSeq++
		return c.b.add(p)
	}
	p := c.packet(false, "FA", c.srvSeq, c.cliSeq, nil)
	c.srvSeq++
	return c.b.add(p)
}

// packet serializes one IPv4 or IPv6 TCP packet.
func (c *pcapConv) packet(fromClient bool, flags string, seq, ack uint32, payload []byte) []byte {
	src, dst := c.cli, c.srv
	if !fromClient {
		src, dst = dst, src
	}
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: seq, Ack: ack, Window: 65535}
	for _, f := range flags {
		switch f {
		case 'S':
			tcp.SYN = true
		case 'A':
			tcp.ACK = true
		case 'F':
			tcp.FIN = true
		case 'P':
			tcp.PSH = true
		case 'R':
			tcp.RST = true
		}
	}
	var ip gopacket.SerializableLayer
	if src.Addr().Is4() {
		ip4 := &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		tcp.SetNetworkLayerForChecksum(ip4)
		ip = ip4
	} else {
		ip6 := &layers.IPv6{Version: 6, NextHeader: layers.IPProtocolTCP, HopLimit: 64,
			SrcIP: net.IP(src.Addr().AsSlice()), DstIP: net.IP(dst.Addr().AsSlice())}
		tcp.SetNetworkLayerForChecksum(ip6)
		ip = ip6
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ip, tcp, gopacket.Payload(payload)); err != nil {
		c.b.t.Fatalf("serialize packet: %v", err)
	}
	return buf.Bytes()
}

// frame wraps an IP packet in the link-layer header of link type lt.
func pcapFrame(lt uint32, ip []byte) []byte {
	et := []byte{0x08, 0x00}
	family := uint32(2)
	if ip[0]>>4 == 6 {
		et, family = []byte{0x86, 0xdd}, 30
	}
	var hdr []byte
	switch lt {
	case linkEthernet:
		hdr = append([]byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1}, et...)
	case linkEthernet | 1<<16: // Ethernet with an 802.1Q VLAN tag (test-only code)
		hdr = append([]byte{0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0x81, 0x00, 0x00, 0x2a}, et...)
	case linkLinuxSLL:
		hdr = append([]byte{0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 1, 0, 0}, et...)
	case linkLinuxSLL2:
		hdr = append(et, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 0, 0, 0, 0, 0, 1, 0, 0)
	case linkNull:
		hdr = binary.LittleEndian.AppendUint32(nil, family)
	case linkNull | 1<<16: // BSD loopback written on a big-endian host
		hdr = binary.BigEndian.AppendUint32(nil, family)
	case linkLoop:
		hdr = binary.BigEndian.AppendUint32(nil, family)
	}
	return append(hdr, ip...)
}

// pcapFormat is how a capture file is written.
type pcapFormat struct {
	name      string
	linkType  uint32 // the link type written; the frames use linkType&0xffff
	pcapng    bool
	nanos     bool
	bigEndian bool // written by hand, as pcapgo writes little-endian only
	gzip      bool
	snaplen   int // frames are cut to this length; zero: whole
}

// write writes the capture in format f.
func (b *pcapBuilder) write(f pcapFormat) []byte {
	b.t.Helper()
	pkts := append([]pcapPkt(nil), b.pkts...)
	lt := f.linkType &^ (1 << 16)
	var buf bytes.Buffer
	switch {
	case f.pcapng && lt < 256:
		// pcapgo writes nanosecond timestamps, whatever it is told.
		w, err := pcapgo.NewNgWriterInterface(&buf, pcapgo.NgInterface{Name: "eth0", LinkType: layers.LinkType(lt), SnapLength: 262144, TimestampResolution: 9}, pcapgo.DefaultNgWriterOptions)
		if err != nil {
			b.t.Fatal(err)
		}
		for _, p := range pkts {
			d := pcapFrame(f.linkType, p.ip)
			if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: p.ts, CaptureLength: len(d), Length: len(d)}, d); err != nil {
				b.t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			b.t.Fatal(err)
		}
	case f.pcapng:
		buf.Write(ngRaw(lt, pkts, f.linkType))
	case f.bigEndian || lt > 255:
		buf.Write(classicRaw(lt, f.bigEndian, f.nanos, pkts, f.linkType))
	default:
		w := pcapgo.NewWriter(&buf)
		if f.nanos {
			w = pcapgo.NewWriterNanos(&buf)
		}
		if err := w.WriteFileHeader(65536, layers.LinkType(lt)); err != nil {
			b.t.Fatal(err)
		}
		for _, p := range pkts {
			d := pcapFrame(f.linkType, p.ip)
			n := len(d)
			if f.snaplen > 0 {
				n = min(n, f.snaplen)
			}
			if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: p.ts, CaptureLength: n, Length: len(d)}, d[:n]); err != nil {
				b.t.Fatal(err)
			}
		}
	}
	if !f.gzip {
		return buf.Bytes()
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(buf.Bytes())
	zw.Close()
	return z.Bytes()
}

// classicRaw writes a classic pcap file by hand, for what pcapgo cannot
// write: big-endian files and link types above 255.
func classicRaw(lt uint32, bigEndian, nanos bool, pkts []pcapPkt, frameType uint32) []byte {
	var o binary.AppendByteOrder = binary.LittleEndian
	if bigEndian {
		o = binary.BigEndian
	}
	magic := uint32(magicPcapMicros)
	if nanos {
		magic = magicPcapNanos
	}
	b := o.AppendUint32(nil, magic)
	b = o.AppendUint16(b, 2)
	b = o.AppendUint16(b, 4)
	b = o.AppendUint32(b, 0)
	b = o.AppendUint32(b, 0)
	b = o.AppendUint32(b, 262144)
	b = o.AppendUint32(b, lt)
	for _, p := range pkts {
		d := pcapFrame(frameType, p.ip)
		frac := p.ts.Nanosecond() / 1000
		if nanos {
			frac = p.ts.Nanosecond()
		}
		b = o.AppendUint32(b, uint32(p.ts.Unix()))
		b = o.AppendUint32(b, uint32(frac))
		b = o.AppendUint32(b, uint32(len(d)))
		b = o.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
	}
	return b
}

// ngRaw writes a pcapng file by hand (for link types above 255), with a
// name-resolution block to skip and nanosecond timestamps.
func ngRaw(lt uint32, pkts []pcapPkt, frameType uint32) []byte {
	o := binary.LittleEndian
	block := func(b []byte, typ uint32, body []byte) []byte {
		for len(body)%4 != 0 {
			body = append(body, 0)
		}
		n := uint32(len(body) + 12)
		b = o.AppendUint32(b, typ)
		b = o.AppendUint32(b, n)
		b = append(b, body...)
		return o.AppendUint32(b, n)
	}
	shb := o.AppendUint32(nil, ngByteOrderMagic)
	shb = o.AppendUint16(shb, 1)
	shb = o.AppendUint16(shb, 0)
	shb = o.AppendUint64(shb, ^uint64(0))
	b := block(nil, ngSectionHeader, shb)
	idb := o.AppendUint16(nil, uint16(lt))
	idb = o.AppendUint16(idb, 0)
	idb = o.AppendUint32(idb, 262144)
	idb = append(idb, 9, 0, 1, 0, 9, 0, 0, 0) // if_tsresol = 9 (nanoseconds), padded
	idb = append(idb, 0, 0, 0, 0)             // opt_endofopt
	b = block(b, ngInterface, idb)
	b = block(b, 4, []byte("name resolution block to skip"))
	for _, p := range pkts {
		d := pcapFrame(frameType, p.ip)
		ts := uint64(p.ts.UnixNano())
		epb := o.AppendUint32(nil, 0)
		epb = o.AppendUint32(epb, uint32(ts>>32))
		epb = o.AppendUint32(epb, uint32(ts))
		epb = o.AppendUint32(epb, uint32(len(d)))
		epb = o.AppendUint32(epb, uint32(len(d)))
		epb = append(epb, d...)
		b = block(b, ngEnhancedPacket, epb)
	}
	return b
}

// pcapSink keeps what an import writes, in memory.
type pcapSink struct {
	exchanges []*snapshots.Exchange
	seen      int
	ids       int64
}

func (s *pcapSink) NewID() int64                      { s.ids++; return s.ids }
func (s *pcapSink) AddExchange(e *snapshots.Exchange) { s.exchanges = append(s.exchanges, e) }
func (s *pcapSink) CountSeen(snapshots.Direction)     { s.seen++ }

// sorted returns the exchanges by ID.
func (s *pcapSink) sorted() []*snapshots.Exchange {
	es := append([]*snapshots.Exchange(nil), s.exchanges...)
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	return es
}
