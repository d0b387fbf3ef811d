package recorder

import (
	"slices"
	"time"

	"github.com/google/gopacket/tcpassembly"
)

// The assembler flushes connections in the order of a map: run to run, the
// two directions of one TCP connection would hand over their buffered bytes
// in either order, and a response read before or after its request (a HEAD
// request's response has no body) would make one capture import
// differently each time. While it flushes, what it hands over is held, then
// given to each connection in a fixed order: connections as first seen, the
// bytes of its two directions merged by capture time (on a tie, the
// direction seen first), then the ends of both directions.

// heldCall is a Reassembled or ReassemblyComplete call held during a flush.
type heldCall struct {
	h        *pcapHalf
	r        tcpassembly.Reassembly // Bytes copied: the assembler reuses its pages
	complete bool
}

// hold keeps the call when a flush is under way, and reports whether it did.
func (im *pcapImport) hold(h *pcapHalf, rs []tcpassembly.Reassembly, complete bool) bool {
	if im.held == nil {
		return false
	}
	if complete {
		*im.held = append(*im.held, heldCall{h: h, complete: true})
		return true
	}
	for _, r := range rs {
		r.Bytes = append([]byte(nil), r.Bytes...)
		*im.held = append(*im.held, heldCall{h: h, r: r})
	}
	return true
}

// flushInOrder runs flush, an assembler flush, and then replays what it
// handed over in a fixed order.
func (im *pcapImport) flushInOrder(flush func()) {
	held := []heldCall{}
	im.held = &held
	flush()
	im.held = nil
	byConn := map[*pcapConn][2][]heldCall{}
	var conns []*pcapConn
	for _, c := range held {
		q, ok := byConn[c.h.c]
		if !ok {
			conns = append(conns, c.h.c)
		}
		q[c.h.idx] = append(q[c.h.idx], c)
		byConn[c.h.c] = q
	}
	slices.SortFunc(conns, func(a, b *pcapConn) int { return int(a.seq - b.seq) })
	for _, c := range conns {
		q := byConn[c]
		var ends []heldCall
		for len(q[0])+len(q[1]) > 0 {
			i := 0
			if len(q[0]) == 0 || len(q[1]) > 0 && !q[1][0].complete && (q[0][0].complete || seen(q[1][0]).Before(seen(q[0][0]))) {
				i = 1
			}
			call := q[i][0]
			q[i] = q[i][1:]
			if call.complete {
				ends = append(ends, call)
				continue
			}
			call.h.Reassembled([]tcpassembly.Reassembly{call.r})
		}
		for _, call := range ends {
			call.h.ReassemblyComplete()
		}
	}
}

func seen(c heldCall) time.Time { return c.r.Seen }
