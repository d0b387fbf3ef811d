package recorder

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/tcpassembly"
)

// PcapConfig configures ImportPcap. The zero value records every HTTP/1
// connection in the capture.
type PcapConfig struct {
	// Ports are the server ports whose traffic is recorded, as inbound HTTP.
	// Empty means every port that carries HTTP: a connection is recorded when
	// its client's first bytes are an HTTP/1 request line.
	Ports []int
	// BodyLimit is the number of body bytes recorded per request and per
	// response; longer bodies are recorded truncated, with their full size.
	// Zero means DefaultBodyLimit; negative records no body bytes.
	BodyLimit int64
	// Logger receives a debug line per connection that is skipped; nil
	// discards.
	Logger *slog.Logger
}

// PcapStats counts what ImportPcap read and what it made of it.
type PcapStats struct {
	// Format is "pcap" or "pcapng", with " (gzip)" when compressed.
	Format string
	// Packets counts the packets in the capture.
	Packets int64
	// TCPPackets counts the TCP packets considered: those to or from one of
	// the configured ports, or all of them when no port is configured.
	TCPPackets int64
	// Connections counts the TCP connections that carried HTTP requests.
	Connections int64
	// Exchanges counts the exchanges written to the sink.
	Exchanges int64
	// Incomplete counts the exchanges written with an Error: no response in
	// the capture, or a message cut short.
	Incomplete int64
	// OrphanResponses counts responses whose request is not in the capture
	// (the connection was already open when the capture started).
	OrphanResponses int64
	// Gaps counts holes in TCP streams: bytes the capture lost.
	Gaps int64
	// CutPackets counts packets captured shorter than they were, because
	// the capture had a snapshot length (tcpdump -s): their missing bytes
	// leave gaps.
	CutPackets int64
	// TLSConnections counts connections skipped because they carry TLS,
	// which cannot be decrypted.
	TLSConnections int64
	// OtherConnections counts connections to a configured port that do not
	// carry HTTP/1 (with no Ports configured they are not counted).
	OtherConnections int64
	// HTTP2Connections counts the connections among Connections that spoke
	// HTTP/2 in the clear (h2c with prior knowledge: gRPC and the like).
	HTTP2Connections int64
	// HTTP2Broken counts the HTTP/2 connections whose decoding stopped at a
	// gap: HTTP/2 compresses each header block against the ones before it,
	// so the streams after a gap cannot be read (their streams in flight
	// are written with an Error and counted in Incomplete; later ones are
	// not in the snapshot).
	HTTP2Broken int64
	// Ports lists the server ports on which HTTP was recorded, ascending.
	Ports []int
}

// Memory bounds of the TCP reassembly. A page holds 1900 bytes of
// out-of-order data waiting for the bytes before it.
const (
	pcapMaxPagesPerConn = 1024  // ~2 MB per connection
	pcapMaxPagesTotal   = 16384 // ~31 MB in all
	// pcapIdle is how long (in capture time) a connection may stay silent
	// before it is flushed: its missing bytes are given up and it ends.
	pcapIdle = 2 * time.Minute
	// pcapFlushEvery is how often (in capture time) idle connections are
	// flushed.
	pcapFlushEvery = 15 * time.Second
)

// ImportPcap reads a packet capture (pcap or pcapng, possibly gzipped, as
// tcpdump, Wireshark or dumpcap write them) and writes every HTTP/1 exchange
// it finds to sink, as an inbound exchange of the server it was sent to. TCP
// streams are reassembled (both directions, out-of-order and retransmitted
// segments), requests and responses are parsed and paired in order on each
// keep-alive connection. Bodies are recorded as the transfer decoded them
// (de-chunked) but not content-decoded: gzip stays gzip.
//
// Exchange.Start is the time of the request's first packet and Duration runs
// until the response's last one. Service is the request's Host header (with
// port 80 added when it has none), or the server's address when the request
// has no Host, as the live inbound recorder does. A request without a
// response, or whose messages are cut short, is recorded with Error. TLS
// connections are skipped and counted.
//
// Memory stays bounded for large captures: connections silent for two
// minutes of capture time are flushed, and out-of-order data waiting for a
// lost segment is capped. It returns when the capture ends, ctx is done, or
// the capture turns out corrupt or truncated; on error the sink may already
// hold the exchanges read before it.
func ImportPcap(ctx context.Context, r io.Reader, sink Sink, cfg PcapConfig) (PcapStats, error) {
	im, err := newPcapImport(sink, cfg)
	if err != nil {
		return PcapStats{}, fmt.Errorf("import pcap: %w", err)
	}
	if err := im.run(ctx, r); err != nil {
		return im.result(), fmt.Errorf("import pcap: %w", err)
	}
	return im.result(), nil
}

// pcapImport is the state of one ImportPcap. Everything runs on the calling
// goroutine: the assembler calls back into it synchronously.
type pcapImport struct {
	sink   Sink
	ports  map[uint16]bool // nil: guess
	limit  int64
	logger *slog.Logger
	stats  PcapStats

	asm       *tcpassembly.Assembler
	conns     map[connKey]*pcapConn
	nextConn  int64
	cur       *layers.TCP // the packet being assembled; the stream factory reads its flags
	httpPorts map[int]bool
	held      *[]heldCall // during a flush, what the assembler hands over (pcap_flush.go)
}

var _ tcpassembly.StreamFactory = (*pcapImport)(nil)

func newPcapImport(sink Sink, cfg PcapConfig) (*pcapImport, error) {
	if sink == nil {
		return nil, errors.New("no sink")
	}
	im := &pcapImport{
		sink:      sink,
		limit:     cfg.BodyLimit,
		logger:    cfg.Logger,
		conns:     map[connKey]*pcapConn{},
		httpPorts: map[int]bool{},
	}
	if len(cfg.Ports) > 0 {
		im.ports = map[uint16]bool{}
		for _, p := range cfg.Ports {
			if p < 1 || p > 65535 {
				return nil, fmt.Errorf("port %d: want 1 to 65535", p)
			}
			im.ports[uint16(p)] = true
		}
	}
	if im.limit == 0 {
		im.limit = DefaultBodyLimit
	} else if im.limit < 0 {
		im.limit = 0
	}
	if im.logger == nil {
		im.logger = slog.New(slog.DiscardHandler)
	}
	im.asm = tcpassembly.NewAssembler(tcpassembly.NewStreamPool(im))
	im.asm.MaxBufferedPagesPerConnection = pcapMaxPagesPerConn
	im.asm.MaxBufferedPagesTotal = pcapMaxPagesTotal
	return im, nil
}

// run reads every packet, then flushes what is left. A panic in the packet
// decoding or reassembly libraries is turned into an error: bad input must
// not crash the caller.
func (im *pcapImport) run(ctx context.Context, r io.Reader) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("internal error at packet %d (please report it with the capture): %v", im.stats.Packets, p)
		}
	}()
	src, err := openCapture(r)
	if err != nil {
		return err
	}
	im.stats.Format = src.format()
	var (
		dec       pcapDecoder
		lastFlush time.Time
	)
	for {
		if im.stats.Packets%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		pkt, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		im.stats.Packets++
		if pkt.cut {
			im.stats.CutPackets++
		}
		ip, err := linkPayload(pkt.linkType, pkt.data)
		if err != nil {
			return err
		}
		netFlow, tcp, ok := dec.decode(ip)
		if !ok || !im.wanted(tcp) {
			continue
		}
		im.stats.TCPPackets++
		if !tcp.SYN && !tcp.FIN && !tcp.RST && len(tcp.Payload) == 0 {
			continue // a bare ACK: nothing to reassemble
		}
		im.cur = tcp
		im.asm.AssembleWithTimestamp(netFlow, tcp, pkt.ts)
		im.cur = nil
		if lastFlush.IsZero() {
			lastFlush = pkt.ts
		} else if pkt.ts.Sub(lastFlush) >= pcapFlushEvery {
			im.flushOlderThan(pkt.ts.Add(-pcapIdle))
			lastFlush = pkt.ts
		}
	}
	im.flushInOrder(func() { im.asm.FlushAll() })
	im.finishAll()
	return nil
}

// wanted reports whether tcp is to or from a configured port.
func (im *pcapImport) wanted(tcp *layers.TCP) bool {
	return im.ports == nil || im.ports[uint16(tcp.SrcPort)] || im.ports[uint16(tcp.DstPort)]
}

// flushOlderThan ends the connections silent since t, and gives up on
// missing bytes older than t.
func (im *pcapImport) flushOlderThan(t time.Time) {
	im.flushInOrder(func() { im.asm.FlushOlderThan(t) })
	for _, c := range im.connsInOrder() {
		if c.idleSince(t) {
			im.finish(c)
		}
	}
}

// finishAll ends the connections still open when the capture ends.
func (im *pcapImport) finishAll() {
	for _, c := range im.connsInOrder() {
		im.finish(c)
	}
}

// connsInOrder returns the open connections in the order they were first
// seen, so that what is written does not depend on map order.
func (im *pcapImport) connsInOrder() []*pcapConn {
	cs := make([]*pcapConn, 0, len(im.conns))
	for _, c := range im.conns {
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *pcapConn) int { return int(a.seq - b.seq) })
	return cs
}

func (im *pcapImport) result() PcapStats {
	s := im.stats
	s.Ports = nil
	for p := range im.httpPorts {
		s.Ports = append(s.Ports, p)
	}
	slices.Sort(s.Ports)
	return s
}

// pcapDecoder decodes the IP and TCP layers of a packet, reusing its layer
// structs from packet to packet.
type pcapDecoder struct {
	ip4 layers.IPv4
	ip6 layers.IPv6
	tcp layers.TCP
}

// decode returns the network flow and TCP layer of an IPv4 or IPv6 packet;
// ok is false for anything else, fragments and malformed packets included.
func (d *pcapDecoder) decode(ip []byte) (netFlow gopacket.Flow, tcp *layers.TCP, ok bool) {
	if len(ip) == 0 {
		return netFlow, nil, false
	}
	var payload []byte
	switch ip[0] >> 4 {
	case 4:
		if d.ip4.DecodeFromBytes(ip, gopacket.NilDecodeFeedback) != nil ||
			d.ip4.Protocol != layers.IPProtocolTCP ||
			d.ip4.Flags&layers.IPv4MoreFragments != 0 || d.ip4.FragOffset != 0 {
			return netFlow, nil, false
		}
		netFlow, payload = d.ip4.NetworkFlow(), d.ip4.Payload
	case 6:
		if d.ip6.DecodeFromBytes(ip, gopacket.NilDecodeFeedback) != nil || d.ip6.NextHeader != layers.IPProtocolTCP {
			return netFlow, nil, false
		}
		netFlow, payload = d.ip6.NetworkFlow(), d.ip6.Payload
	default:
		return netFlow, nil, false
	}
	if d.tcp.DecodeFromBytes(payload, gopacket.NilDecodeFeedback) != nil {
		return netFlow, nil, false
	}
	return netFlow, &d.tcp, true
}
