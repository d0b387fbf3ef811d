package pgwire

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// stmtRef is what the proxy knows of a statement's text.
type stmtRef struct {
	sql   string // the text as sent; empty when unknown or not kept
	fp    *sqlcore.Fingerprint
	trace string // trace id from a traceparent comment, or ""
}

func (r stmtRef) stmt() sqlcore.Stmt { return sqlcore.Stmt{SQL: r.sql, FP: r.fp, Trace: r.trace} }

// pend is a client message that awaits the server's answer. The server
// answers in order, so the pending messages form a FIFO.
type pend struct {
	kind byte // 'Q', 'P', 'B', 'D', 'E', 'C', 'S' or 'F' (the client message type)
	sent time.Time
	win  *sqlcore.Window // the attribution window when the message was sent
	st   stmtRef         // Q (first statement), P, B, E: the statement
	more []stmtRef
	// Q: the statement to complete next, and when it started.
	next      int
	nextStart time.Time
	bind      uint64 // E, C of a portal: the Bind that made the portal
}

// fifo is a ring of pending messages.
type fifo struct {
	buf        []pend
	head, size int
}

func (q *fifo) push(p pend) {
	if q.size == len(q.buf) {
		n := max(16, 2*len(q.buf))
		buf := make([]pend, n)
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = p
	q.size++
}

// front returns the oldest pending message, or nil.
func (q *fifo) front() *pend {
	if q.size == 0 {
		return nil
	}
	return &q.buf[q.head]
}

func (q *fifo) pop() {
	q.buf[q.head] = pend{}
	q.head = (q.head + 1) % len(q.buf)
	q.size--
}

// index returns the position of the first pending message of kind k, or -1.
func (q *fifo) index(k byte) int {
	for i := range q.size {
		if q.buf[(q.head+i)%len(q.buf)].kind == k {
			return i
		}
	}
	return -1
}

// session is the protocol state of one client connection: what the client
// defined (statements, portals), what awaits an answer, and what is being
// counted. The client side and the server side each run on their own
// goroutine; they share only the FIFO, under mu.
type session struct {
	rec *sqlcore.Recorder

	mu   sync.Mutex
	q    fifo
	skip bool // after an error the server ignores messages up to Sync

	client clientSide
	server serverSide

	ready atomic.Bool // the server has said ReadyForQuery: startup is over
}

var _ sqlcore.Session = (*session)(nil)

func newSession(rec *sqlcore.Recorder) *session {
	s := &session{rec: rec}
	s.client.s = s
	s.client.keepText = rec.KeepText()
	s.server.s = s
	return s
}

func (s *session) Client(b []byte, now time.Time) error { return s.client.feed(b, now) }

func (s *session) Server(b []byte, now time.Time) error { return s.server.feed(b, now) }

func (s *session) Ready() bool { return s.ready.Load() }

func (s *session) Partial() (client, server bool) {
	return s.client.fr.partial(), s.server.fr.partial()
}

// Busy reports whether the server owes the client an answer: a query, a
// Sync or a function call is pending.
func (s *session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.q.index('Q') >= 0 || s.q.index('S') >= 0 || s.q.index('F') >= 0
}

// enqueue adds a pending message unless the server will skip it.
func (s *session) enqueue(p pend) {
	s.mu.Lock()
	if p.kind == 'S' {
		s.skip = false
	} else if s.skip {
		s.mu.Unlock()
		return
	}
	s.q.push(p)
	s.mu.Unlock()
}
