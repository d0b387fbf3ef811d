package recorder

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/google/gopacket/pcapgo"
)

// capturedPacket is one packet of a capture file.
type capturedPacket struct {
	// data is valid until the next packet is read.
	data     []byte
	ts       time.Time
	linkType uint32 // a LINKTYPE_ value
	// cut reports a packet captured shorter than it was: the capture had a
	// snapshot length.
	cut bool
}

// packetSource yields the packets of a capture file in file order; next
// returns io.EOF at a clean end.
type packetSource interface {
	next() (capturedPacket, error)
	format() string
}

// pcapMaxSnaplen is the largest packet read, as tcpdump's MAXIMUM_SNAPLEN:
// a record claiming more is corrupt, and is not allocated for.
const pcapMaxSnaplen = 262144

// File magic numbers.
const (
	magicPcapMicros   = 0xa1b2c3d4
	magicPcapNanos    = 0xa1b23c4d
	magicPcapngBlock  = 0x0a0d0d0a // a section header block starts a pcapng file
	magicGzipLen      = 2
	pcapFileHeaderLen = 24
)

// openCapture detects the format of r by its magic number: classic pcap
// (read with gopacket's pcapgo) or pcapng (read with pcapngReader), either
// possibly gzipped.
func openCapture(r io.Reader) (packetSource, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	gzipped := false
	if b, _ := br.Peek(magicGzipLen); len(b) == 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzipped capture: %w", err)
		}
		br, gzipped = bufio.NewReaderSize(zr, 64<<10), true
	}
	magic, err := br.Peek(4)
	if len(magic) < 4 {
		if len(magic) == 0 && (err == io.EOF || err == nil) {
			return nil, errors.New("not a pcap or pcapng file: it is empty")
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read capture: %w", err)
		}
		return nil, fmt.Errorf("not a pcap or pcapng file: it has only %d bytes", len(magic))
	}
	var src packetSource
	switch le, be := binary.LittleEndian.Uint32(magic), binary.BigEndian.Uint32(magic); {
	case le == magicPcapMicros || le == magicPcapNanos || be == magicPcapMicros || be == magicPcapNanos:
		src, err = newClassicReader(br)
	case le == magicPcapngBlock:
		src, err = newPcapngReader(br)
	default:
		return nil, fmt.Errorf("not a pcap or pcapng file (it starts with % x)", magic)
	}
	if err != nil {
		return nil, err
	}
	if gzipped {
		return gzipSource{src}, nil
	}
	return src, nil
}

type gzipSource struct{ packetSource }

func (g gzipSource) format() string { return g.packetSource.format() + " (gzip)" }

// classicReader reads classic pcap files with pcapgo. It takes the link
// type from the file header itself: pcapgo 1.1.19 keeps it in a uint8,
// which turns LINKTYPE_LINUX_SLL2 (276, what `tcpdump -i any` writes) into
// an unknown 20.
type classicReader struct {
	r        *pcapgo.Reader
	linkType uint32
	n        int64
}

func newClassicReader(br *bufio.Reader) (*classicReader, error) {
	hdr, err := br.Peek(pcapFileHeaderLen)
	if err != nil {
		return nil, fmt.Errorf("pcap file header: truncated after %d bytes", len(hdr))
	}
	var order binary.ByteOrder = binary.LittleEndian
	if m := binary.BigEndian.Uint32(hdr); m == magicPcapMicros || m == magicPcapNanos {
		order = binary.BigEndian
	}
	// The upper bits tell whether frames end in a frame check sequence; the
	// IP length excludes it anyway.
	lt := order.Uint32(hdr[20:24]) & 0x03ffffff
	if err := checkLinkType(lt); err != nil {
		return nil, err
	}
	r, err := pcapgo.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("pcap file header: %w", err)
	}
	// Like tcpdump, ignore the snapshot length the file claims (writers do
	// not always keep to it) but refuse records larger than any capture.
	r.SetSnaplen(pcapMaxSnaplen)
	return &classicReader{r: r, linkType: lt}, nil
}

func (c *classicReader) format() string { return "pcap" }

func (c *classicReader) next() (capturedPacket, error) {
	data, ci, err := c.r.ZeroCopyReadPacketData()
	switch {
	case err == io.EOF:
		return capturedPacket{}, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return capturedPacket{}, fmt.Errorf("the capture is truncated: packet %d is cut short (was the capture stopped abruptly?)", c.n+1)
	case err != nil:
		return capturedPacket{}, fmt.Errorf("packet %d: %w (the capture is corrupt)", c.n+1, err)
	}
	c.n++
	return capturedPacket{data: data, ts: ci.Timestamp, linkType: c.linkType, cut: ci.CaptureLength < ci.Length}, nil
}
