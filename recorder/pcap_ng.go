package recorder

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"time"
)

// pcapngReader reads pcapng files (what Wireshark and dumpcap write): section
// header, interface description, enhanced, simple and (obsolete) packet
// blocks; other blocks are skipped.
//
// It replaces pcapgo's NgReader of gopacket 1.1.19, which keeps link types
// in a uint8 (LINKTYPE_LINUX_SLL2, 276, becomes 20), divides by zero on an
// if_tsresol of 2^-64 or 10^-20 and beyond, and allocates whatever packet
// length a block claims: a corrupt file must give an error, not a crash.
type pcapngReader struct {
	r      *bufio.Reader
	order  binary.ByteOrder
	ifaces []pcapngIface
	buf    []byte
	n      int64     // packets read
	last   time.Time // timestamp of the last packet (simple packet blocks have none)
}

// pcapngIface is an interface description: what the packets captured on it
// are and how their timestamps count.
type pcapngIface struct {
	linkType    uint32
	snaplen     uint32
	unitsPerSec uint64
	offset      int64 // seconds added to every timestamp
}

// Block types.
const (
	ngSectionHeader      = 0x0a0d0d0a
	ngInterface          = 1
	ngPacketObsolete     = 2
	ngSimplePacket       = 3
	ngEnhancedPacket     = 6
	ngByteOrderMagic     = 0x1a2b3c4d
	ngMaxBlock           = pcapMaxSnaplen + 64<<10 // a packet block with room for options
	ngOptionEnd          = 0
	ngOptionTSResol      = 9
	ngOptionTSOffset     = 14
	ngDefaultUnitsPerSec = 1000000 // microseconds unless if_tsresol says otherwise
)

func newPcapngReader(br *bufio.Reader) (*pcapngReader, error) {
	return &pcapngReader{r: br, order: binary.LittleEndian}, nil
}

func (p *pcapngReader) format() string { return "pcapng" }

func (p *pcapngReader) next() (capturedPacket, error) {
	for {
		typ, body, err := p.block()
		if err != nil {
			return capturedPacket{}, err
		}
		switch typ {
		case ngSectionHeader:
			if len(body) < 16 {
				return capturedPacket{}, errors.New("pcapng section header: too short (the capture is corrupt)")
			}
			if major := p.order.Uint16(body[4:6]); major != 1 {
				return capturedPacket{}, fmt.Errorf("pcapng section header: version %d.%d is not supported", major, p.order.Uint16(body[6:8]))
			}
			p.ifaces = p.ifaces[:0]
		case ngInterface:
			iface, err := p.parseInterface(body)
			if err != nil {
				return capturedPacket{}, fmt.Errorf("pcapng interface %d: %w", len(p.ifaces), err)
			}
			p.ifaces = append(p.ifaces, iface)
		case ngEnhancedPacket, ngPacketObsolete:
			if len(body) < 20 {
				return capturedPacket{}, fmt.Errorf("pcapng packet %d: block too short (the capture is corrupt)", p.n+1)
			}
			id := p.order.Uint32(body[0:4])
			if typ == ngPacketObsolete {
				id = uint32(p.order.Uint16(body[0:2]))
			}
			caplen := p.order.Uint32(body[12:16])
			if uint64(caplen) > uint64(len(body)-20) {
				return capturedPacket{}, fmt.Errorf("pcapng packet %d: captured length %d overruns its block (the capture is corrupt)", p.n+1, caplen)
			}
			ts := uint64(p.order.Uint32(body[4:8]))<<32 | uint64(p.order.Uint32(body[8:12]))
			pkt, err := p.packet(id, ts, true, body[20:20+caplen])
			pkt.cut = caplen < p.order.Uint32(body[16:20])
			return pkt, err
		case ngSimplePacket:
			if len(body) < 4 {
				return capturedPacket{}, fmt.Errorf("pcapng packet %d: block too short (the capture is corrupt)", p.n+1)
			}
			data, orig := body[4:], p.order.Uint32(body[0:4])
			if uint64(orig) < uint64(len(data)) {
				data = data[:orig] // the rest is padding
			}
			if len(p.ifaces) > 0 && p.ifaces[0].snaplen > 0 && uint64(len(data)) > uint64(p.ifaces[0].snaplen) {
				data = data[:p.ifaces[0].snaplen]
			}
			pkt, err := p.packet(0, 0, false, data)
			pkt.cut = uint64(len(data)) < uint64(orig)
			return pkt, err
		}
	}
}

// packet returns a packet captured on interface id.
func (p *pcapngReader) packet(id uint32, ts uint64, hasTS bool, data []byte) (capturedPacket, error) {
	p.n++
	if uint64(id) >= uint64(len(p.ifaces)) {
		return capturedPacket{}, fmt.Errorf("pcapng packet %d: names interface %d, but the section describes %d (the capture is corrupt)", p.n, id, len(p.ifaces))
	}
	iface := &p.ifaces[id]
	if err := checkLinkType(iface.linkType); err != nil {
		return capturedPacket{}, fmt.Errorf("pcapng interface %d: %w", id, err)
	}
	if hasTS {
		p.last = iface.time(ts)
	}
	return capturedPacket{data: data, ts: p.last, linkType: iface.linkType}, nil
}

// time converts a timestamp counted in the interface's units.
func (f *pcapngIface) time(ts uint64) time.Time {
	sec, frac := ts/f.unitsPerSec, ts%f.unitsPerSec
	// frac < unitsPerSec, so the quotient is below 1e9 and cannot overflow.
	hi, lo := bits.Mul64(frac, 1e9)
	ns, _ := bits.Div64(hi, lo, f.unitsPerSec)
	return time.Unix(int64(sec)+f.offset, int64(ns)).UTC()
}

// parseInterface reads an interface description block.
func (p *pcapngReader) parseInterface(body []byte) (pcapngIface, error) {
	if len(body) < 8 {
		return pcapngIface{}, errors.New("block too short (the capture is corrupt)")
	}
	f := pcapngIface{
		linkType:    uint32(p.order.Uint16(body[0:2])),
		snaplen:     p.order.Uint32(body[4:8]),
		unitsPerSec: ngDefaultUnitsPerSec,
	}
	for opts := body[8:]; len(opts) >= 4; {
		code, n := p.order.Uint16(opts[0:2]), int(p.order.Uint16(opts[2:4]))
		if code == ngOptionEnd {
			break
		}
		opts = opts[4:]
		if n > len(opts) {
			return pcapngIface{}, errors.New("option overruns its block (the capture is corrupt)")
		}
		val := opts[:n]
		opts = opts[min(len(opts), (n+3)&^3):]
		switch {
		case code == ngOptionTSResol && n >= 1:
			exp := uint(val[0] & 0x7f)
			if val[0]&0x80 != 0 {
				if exp > 63 {
					return pcapngIface{}, fmt.Errorf("timestamp resolution 2^-%d is not supported", exp)
				}
				f.unitsPerSec = 1 << exp
			} else {
				if exp > 19 {
					return pcapngIface{}, fmt.Errorf("timestamp resolution 10^-%d is not supported", exp)
				}
				f.unitsPerSec = 1
				for range exp {
					f.unitsPerSec *= 10
				}
			}
		case code == ngOptionTSOffset && n >= 8:
			f.offset = int64(p.order.Uint64(val[:8]))
		}
	}
	return f, nil
}

// block reads the next block and returns its type and body (without the
// type and the two length fields). The body is valid until the next call.
func (p *pcapngReader) block() (typ uint32, body []byte, err error) {
	hdr, err := p.r.Peek(8)
	if len(hdr) == 0 && err == io.EOF {
		return 0, nil, io.EOF
	}
	if len(hdr) < 8 {
		return 0, nil, p.truncated()
	}
	if binary.LittleEndian.Uint32(hdr[0:4]) == ngSectionHeader {
		// The byte order of a section is that of its byte-order magic.
		bom, _ := p.r.Peek(12)
		if len(bom) < 12 {
			return 0, nil, p.truncated()
		}
		switch uint32(ngByteOrderMagic) {
		case binary.LittleEndian.Uint32(bom[8:12]):
			p.order = binary.LittleEndian
		case binary.BigEndian.Uint32(bom[8:12]):
			p.order = binary.BigEndian
		default:
			return 0, nil, errors.New("pcapng section header: bad byte-order magic (the capture is corrupt)")
		}
	}
	typ, length := p.order.Uint32(hdr[0:4]), p.order.Uint32(hdr[4:8])
	if length < 12 || length%4 != 0 {
		return 0, nil, fmt.Errorf("pcapng block of type %#x: bad length %d (the capture is corrupt)", typ, length)
	}
	if _, err := p.r.Discard(8); err != nil {
		return 0, nil, p.truncated()
	}
	switch typ {
	case ngSectionHeader, ngInterface, ngPacketObsolete, ngSimplePacket, ngEnhancedPacket:
	default:
		// Name resolution, statistics, custom blocks…: not needed.
		if _, err := p.r.Discard(int(length - 8)); err != nil {
			return 0, nil, p.truncated()
		}
		return typ, nil, nil
	}
	if length > ngMaxBlock {
		return 0, nil, fmt.Errorf("pcapng block of type %#x: length %d is larger than any packet (the capture is corrupt)", typ, length)
	}
	n := int(length - 8)
	if cap(p.buf) < n {
		p.buf = make([]byte, n)
	}
	p.buf = p.buf[:n]
	if _, err := io.ReadFull(p.r, p.buf); err != nil {
		return 0, nil, p.truncated()
	}
	if trailer := p.order.Uint32(p.buf[n-4:]); trailer != length {
		return 0, nil, fmt.Errorf("pcapng block of type %#x: its lengths differ (%d, %d) (the capture is corrupt)", typ, length, trailer)
	}
	return typ, p.buf[:n-4], nil
}

func (p *pcapngReader) truncated() error {
	return fmt.Errorf("the capture is truncated after packet %d (was the capture stopped abruptly?)", p.n)
}
