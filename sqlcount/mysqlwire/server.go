package mysqlwire

import (
	"encoding/binary"
	"strconv"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// What the server side expects next of the answer to the front command.
type rstate uint8

const (
	rsFirst     rstate = iota // the answer's first packet (or the next result's)
	rsColumns                 // column definitions (cols of them), then EOF unless deprecateEOF
	rsColumnEOF               // the EOF after the column definitions
	rsRows                    // rows, up to the EOF or OK that ends them, or an ERR
	rsPrepare                 // a prepare's parameter and column definitions (cols of them, with EOFs)
	rsInfile                  // LOCAL INFILE: the OK or ERR after the client's data
	rsAuth                    // COM_CHANGE_USER: authentication, up to its OK or ERR
)

// suspension is an executed statement whose cursor is open: it completes
// when the last row is fetched, or when the statement is reset or closed.
type suspension struct {
	st    stmtRef
	win   *sqlcore.Window
	start time.Time
	rows  int64
}

// serverSide follows what the server answers, and completes statements.
type serverSide struct {
	s   *session
	now time.Time
	fr  framer

	state rstate
	cols  int   // definitions left to read (rsColumns, rsPrepare)
	eofs  int   // rsPrepare: EOF packets left to read
	rows  int64 // rows of the result being read
	// next: the statement of a query string that the next result completes;
	// start: when the result being read began.
	next    int
	start   time.Time
	started bool // start is set for the front command

	lastDone time.Time // when the last statement completed
	stmts    map[uint32]stmtRef
	lastID   uint32 // the statement last prepared (id 0xffffffff of a MariaDB pipeline)
	prepID   uint32 // the statement being prepared
	cursors  map[uint32]suspension
	errBuf   []byte
}

var _ handler = (*serverSide)(nil)

func (v *serverSide) feed(b []byte, now time.Time) error {
	v.now = now
	return v.fr.feed(b, v)
}

func (v *serverSide) want(seq byte, n int) int { return min(n, 1024) }

func (v *serverSide) packet(seq byte, body []byte, n int, cont bool) error {
	if cont {
		return nil // the rest of a split row
	}
	v.s.mu.Lock()
	v.dropClosed()
	f := v.s.q.front()
	v.s.mu.Unlock()
	if f == nil {
		return nil // not an answer: a server closing the connection says why
	}
	var first byte
	if n > 0 {
		first = body[0]
	}
	switch v.state {
	case rsFirst:
		return v.first(f, first, body, n)
	case rsColumns:
		v.cols--
		if v.cols <= 0 {
			v.state = rsRows
			if !v.s.deprecateEOF {
				v.state = rsColumnEOF
			}
		}
	case rsColumnEOF:
		if first == mysql.ERR_HEADER {
			v.errorEnd(f, body)
			return nil
		}
		// The EOF after the columns: a cursor opened when it says so.
		if st, ok := eofStatus(body, n); ok && st&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 && f.cmd == mysql.COM_STMT_EXECUTE {
			v.suspend(f)
			return nil
		}
		v.state = rsRows
	case rsRows:
		return v.row(f, first, body, n)
	case rsPrepare:
		v.prepareDefs(f, first, n)
	case rsInfile:
		v.first(f, first, body, n)
	case rsAuth:
		if first == mysql.OK_HEADER || first == mysql.ERR_HEADER {
			if first == mysql.OK_HEADER {
				v.forgetStatements()
			}
			v.done()
		}
	}
	return nil
}

// first handles the first packet of an answer (or of a further result).
func (v *serverSide) first(f *pend, first byte, body []byte, n int) error {
	switch f.cmd {
	case mysql.COM_QUERY, mysql.COM_STMT_EXECUTE, mysql.COM_STMT_FETCH:
		return v.result(f, first, body, n)
	case mysql.COM_STMT_PREPARE:
		return v.prepared(f, first, body, n)
	case mysql.COM_INIT_DB:
		if first == mysql.ERR_HEADER {
			v.complete(f, 0, v.errorText(body), false)
		} else {
			v.complete(f, 0, "", false)
		}
		v.done()
	case mysql.COM_CHANGE_USER:
		v.state = rsAuth
		return v.packet(0, body, n, false)
	case mysql.COM_RESET_CONNECTION:
		if first == mysql.OK_HEADER {
			v.forgetStatements()
		}
		v.done()
	case mysql.COM_STMT_RESET:
		v.finishCursor(f.id)
		v.done()
	case mysql.COM_FIELD_LIST:
		// Column definitions up to an EOF (or an ERR), whatever the
		// capabilities.
		if first == mysql.ERR_HEADER || (first == mysql.EOF_HEADER && n < 9) {
			v.done()
		}
	default:
		// One packet answers every other command (OK, ERR, EOF, or
		// COM_STATISTICS's text).
		v.done()
	}
	return nil
}

// result handles the first packet of a result of a query, an execute or a
// fetch: OK, ERR, a LOCAL INFILE request, or a result set's column count.
func (v *serverSide) result(f *pend, first byte, body []byte, n int) error {
	if !v.started {
		v.start, v.started = v.startOf(f), true
	}
	switch {
	case first == mysql.ERR_HEADER:
		if f.cmd == mysql.COM_STMT_FETCH {
			v.cursorError(f, body)
			return nil
		}
		v.errorEnd(f, body)
	case first == mysql.OK_HEADER && f.cmd != mysql.COM_STMT_FETCH:
		rows, status := okInfo(body)
		v.rows = int64(rows)
		v.resultEnd(f, status)
	case first == mysql.LocalInFile_HEADER && f.cmd == mysql.COM_QUERY && v.state == rsFirst:
		v.state = rsInfile
	case f.cmd == mysql.COM_STMT_FETCH:
		// Rows straight away, no column definitions.
		v.state = rsRows
		return v.row(f, first, body, n)
	default:
		cols, k := lencInt(body)
		if k == 0 || cols == 0 {
			return malformed("result set: bad column count")
		}
		v.cols = int(min(cols, 1<<16))
		v.rows = 0
		v.state = rsColumns
	}
	return nil
}

// row handles a packet among a result set's rows.
func (v *serverSide) row(f *pend, first byte, body []byte, n int) error {
	switch {
	case first == mysql.EOF_HEADER && n < maxPayload && (n < 9 || v.s.deprecateEOF):
		status, _ := eofStatus(body, n)
		if v.s.deprecateEOF {
			_, status = okInfo(body)
		}
		if f.cmd == mysql.COM_STMT_FETCH {
			v.fetched(f, status)
			return nil
		}
		if status&mysql.SERVER_STATUS_CURSOR_EXISTS != 0 && f.cmd == mysql.COM_STMT_EXECUTE && v.rows == 0 {
			v.suspend(f)
			return nil
		}
		v.resultEnd(f, status)
	case first == mysql.ERR_HEADER:
		if f.cmd == mysql.COM_STMT_FETCH {
			v.cursorError(f, body)
			return nil
		}
		v.errorEnd(f, body)
	default:
		v.rows++
	}
	return nil
}

// resultEnd completes a result that ended with status; another follows
// when the status says so.
func (v *serverSide) resultEnd(f *pend, status uint16) {
	v.s.noBackslash.Store(status&mysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED != 0)
	more := status&mysql.SERVER_MORE_RESULTS_EXISTS != 0
	switch {
	case f.cmd == mysql.COM_QUERY && (!more || v.next < len(f.more)):
		// Each result completes a statement of the query string; a last
		// one's further results (a CALL's) are its own.
		v.complete(f, v.rows, "", true)
		v.next++
		v.rows = 0
	case !more:
		v.complete(f, v.rows, "", false)
	}
	if more {
		v.state = rsFirst
		return
	}
	v.done()
}

// errorEnd completes the statement running with the server's error; an
// error ends the command (a query string's later statements do not run).
func (v *serverSide) errorEnd(f *pend, body []byte) {
	if isProgress(body) {
		return
	}
	v.complete(f, 0, v.errorText(body), f.cmd == mysql.COM_QUERY)
	v.done()
}

// complete records the statement of f that the current result ends: the
// query string's next one when ofQuery.
func (v *serverSide) complete(f *pend, rows int64, errText string, ofQuery bool) {
	st := f.st
	proto := snapshots.ProtocolSimple
	switch {
	case ofQuery:
		if k := min(v.next, len(f.more)); k > 0 {
			st = f.more[k-1]
		}
	case f.cmd == mysql.COM_STMT_EXECUTE:
		st, proto = v.statement(f.id), snapshots.ProtocolExtended
	case f.cmd == mysql.COM_STMT_PREPARE:
		proto = snapshots.ProtocolExtended
	}
	start := v.start
	if f.cmd != mysql.COM_QUERY && f.cmd != mysql.COM_STMT_EXECUTE {
		start = v.startOf(f)
	}
	v.s.rec.Record(st.stmt(), proto, f.win, start, v.now, rows, nil, errText)
	v.lastDone = v.now
	v.start = v.now
}

// startOf is when the server began on f: when it was sent, or when the
// server finished the command before it.
func (v *serverSide) startOf(f *pend) time.Time {
	if f.sent.Before(v.lastDone) {
		return v.lastDone
	}
	return f.sent
}

// done ends the front command's answer.
func (v *serverSide) done() {
	v.s.mu.Lock()
	if v.s.q.size > 0 {
		v.s.q.pop()
	}
	v.dropClosed()
	v.s.mu.Unlock()
	v.state, v.next, v.rows, v.cols, v.started = rsFirst, 0, 0, 0, false
}

// dropClosed takes the statement closes at the front of the FIFO, which
// the server does not answer, and forgets their statements; s.mu is held.
func (v *serverSide) dropClosed() {
	for v.s.q.size > 0 && v.s.q.front().noReply {
		id := v.s.q.front().id
		v.s.q.pop()
		delete(v.stmts, id)
		v.finishCursor(id)
	}
}

// statement returns the prepared statement with id.
func (v *serverSide) statement(id uint32) stmtRef {
	if id == 0xffffffff {
		id = v.lastID
	}
	if st, ok := v.stmts[id]; ok {
		return st
	}
	return stmtRef{fp: v.s.rec.Named("(unknown prepared statement " + strconv.FormatUint(uint64(id), 10) + ")")}
}

// forgetStatements drops the connection's prepared statements and cursors
// (the server did: COM_RESET_CONNECTION, COM_CHANGE_USER).
func (v *serverSide) forgetStatements() {
	clear(v.stmts)
	clear(v.cursors)
}

// errorText renders an ERR packet as "code (SQLSTATE): message".
func (v *serverSide) errorText(body []byte) string {
	if len(body) < 3 {
		return "malformed error packet"
	}
	code := binary.LittleEndian.Uint16(body[1:3])
	rest := body[3:]
	state := "HY000"
	if len(rest) >= 6 && rest[0] == '#' {
		state, rest = string(rest[1:6]), rest[6:]
	}
	v.errBuf = v.errBuf[:0]
	v.errBuf = strconv.AppendUint(v.errBuf, uint64(code), 10)
	v.errBuf = append(v.errBuf, " ("...)
	v.errBuf = append(v.errBuf, state...)
	v.errBuf = append(v.errBuf, "): "...)
	v.errBuf = append(v.errBuf, rest...)
	return string(v.errBuf)
}

// isProgress reports whether an ERR packet is a MariaDB progress report
// (code 0xffff), which is no error.
func isProgress(body []byte) bool {
	return len(body) >= 3 && body[1] == 0xff && body[2] == 0xff
}
