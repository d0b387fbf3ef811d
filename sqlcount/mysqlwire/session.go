package mysqlwire

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// stmtRef is what the proxy knows of a statement's text.
type stmtRef struct {
	sql   string // the text as sent; empty when unknown or not kept
	fp    *sqlcore.Fingerprint
	trace string // trace id from a traceparent comment, or ""
}

func (r stmtRef) stmt() sqlcore.Stmt { return sqlcore.Stmt{SQL: r.sql, FP: r.fp, Trace: r.trace} }

// pend is a command that awaits the server's answer. The server answers
// commands in order, so the pending ones form a FIFO.
type pend struct {
	cmd  byte // the command byte (comQuery, comStmtExecute, …)
	sent time.Time
	win  *sqlcore.Window // the attribution window when the command was sent
	st   stmtRef         // query (first statement), prepare, init db: the statement
	more []stmtRef       // query: the statements after the first
	id   uint32          // statement commands: the statement id
	// noReply: the server sends nothing back (COM_STMT_CLOSE); the entry
	// only orders the close after the answers before it.
	noReply bool
}

// fifo is a ring of pending commands.
type fifo struct {
	buf        []pend
	head, size int
}

func (q *fifo) push(p pend) {
	if q.size == len(q.buf) {
		n := max(8, 2*len(q.buf))
		buf := make([]pend, n)
		for i := range q.size {
			buf[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = buf, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = p
	q.size++
}

// front returns the oldest pending command, or nil.
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

// session is the protocol state of one client connection after its
// handshake: what awaits an answer, and what is being counted. The client
// side and the server side each run on their own goroutine; they share
// only the FIFO (under mu) and two flags.
type session struct {
	rec          *sqlcore.Recorder
	deprecateEOF bool // CLIENT_DEPRECATE_EOF: result sets end in an OK packet, no EOF after the columns

	mu sync.Mutex
	q  fifo

	// opaque: a command whose answer this package does not follow (a
	// binlog dump) was sent; the rest of the connection is relayed
	// without decoding.
	opaque      atomic.Bool
	noBackslash atomic.Bool // the server said NO_BACKSLASH_ESCAPES

	client clientSide
	server serverSide
}

var _ sqlcore.Session = (*session)(nil)

func newSession(rec *sqlcore.Recorder, caps uint32, status uint16) *session {
	s := &session{rec: rec, deprecateEOF: caps&mysql.CLIENT_DEPRECATE_EOF != 0}
	s.client.s = s
	s.client.keepText = rec.KeepText()
	s.server.s = s
	s.noBackslash.Store(status&mysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED != 0)
	return s
}

func (s *session) Client(b []byte, now time.Time) error {
	if s.opaque.Load() {
		return nil
	}
	return s.client.feed(b, now)
}

func (s *session) Server(b []byte, now time.Time) error {
	if s.opaque.Load() {
		return nil
	}
	return s.server.feed(b, now)
}

// Ready: the handshake, authentication included, was over before the
// session began.
func (s *session) Ready() bool { return true }

func (s *session) Partial() (client, server bool) {
	return s.client.fr.partial(), s.server.fr.partial()
}

// Busy reports whether the server owes the client an answer.
func (s *session) Busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.q.size {
		if !s.q.buf[(s.q.head+i)%len(s.q.buf)].noReply {
			return true
		}
	}
	return false
}

// enqueue adds a pending command.
func (s *session) enqueue(p pend) {
	s.mu.Lock()
	s.q.push(p)
	s.mu.Unlock()
}
