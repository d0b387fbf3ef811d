package mysqlwire

import (
	"encoding/binary"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// Answers that take more than one packet, besides result sets: a prepare's
// definitions and a cursor's fetches.

// prepared handles the first packet of a prepare's answer: COM_STMT_PREPARE_OK
// names the statement (its definitions follow), ERR counts a failed
// statement.
func (v *serverSide) prepared(f *pend, first byte, body []byte, n int) error {
	if first == mysql.ERR_HEADER {
		v.complete(f, 0, v.errorText(body), false)
		v.done()
		return nil
	}
	if first != mysql.OK_HEADER || len(body) < 9 {
		return malformed("COM_STMT_PREPARE_OK: %d bytes", n)
	}
	id := binary.LittleEndian.Uint32(body[1:5])
	cols := int(binary.LittleEndian.Uint16(body[5:7]))
	params := int(binary.LittleEndian.Uint16(body[7:9]))
	if v.stmts == nil || len(v.stmts) >= maxStmts {
		v.stmts = make(map[uint32]stmtRef)
	}
	v.stmts[id] = f.st
	v.lastID = id
	left := cols + params
	if !v.s.deprecateEOF {
		if cols > 0 {
			left++
		}
		if params > 0 {
			left++
		}
	}
	if left == 0 {
		v.done()
		return nil
	}
	v.cols = left
	v.state = rsPrepare
	return nil
}

// prepareDefs counts down a prepare's definitions (and their EOFs).
func (v *serverSide) prepareDefs(f *pend, first byte, n int) {
	v.cols--
	if v.cols <= 0 {
		v.done()
	}
}

// suspend keeps an execute whose cursor opened: it completes later.
func (v *serverSide) suspend(f *pend) {
	if v.cursors == nil {
		v.cursors = make(map[uint32]suspension)
	}
	id := f.id
	if id == 0xffffffff {
		id = v.lastID
	}
	v.cursors[id] = suspension{st: v.statement(id), win: f.win, start: v.start}
	v.lastDone = v.now
	v.done()
}

// fetched ends a fetch's rows; the cursor's statement completes with its
// last row.
func (v *serverSide) fetched(f *pend, status uint16) {
	if sp, ok := v.cursors[f.id]; ok {
		sp.rows += v.rows
		v.cursors[f.id] = sp
		if status&mysql.SERVER_STATUS_LAST_ROW_SEND != 0 {
			v.finishCursor(f.id)
		}
	}
	v.lastDone = v.now
	v.done()
}

// cursorError fails the cursor's statement on a fetch's ERR.
func (v *serverSide) cursorError(f *pend, body []byte) {
	if sp, ok := v.cursors[f.id]; ok {
		delete(v.cursors, f.id)
		v.s.rec.Record(sp.st.stmt(), snapshots.ProtocolExtended, sp.win, sp.start, v.now, 0, nil, v.errorText(body))
		v.lastDone = v.now
	}
	v.done()
}

// finishCursor completes the statement of an open cursor (reset, closed or
// read to its end).
func (v *serverSide) finishCursor(id uint32) {
	sp, ok := v.cursors[id]
	if !ok {
		return
	}
	delete(v.cursors, id)
	v.s.rec.Record(sp.st.stmt(), snapshots.ProtocolExtended, sp.win, sp.start, v.now, sp.rows, nil, "")
	v.lastDone = v.now
}

// okInfo returns the affected rows and the status of an OK packet (an
// EOF-headed one too, as CLIENT_DEPRECATE_EOF ends result sets).
func okInfo(body []byte) (rows uint64, status uint16) {
	if len(body) < 2 {
		return 0, 0
	}
	b := body[1:]
	rows, k := lencInt(b)
	if k == 0 || k > len(b) {
		return 0, 0
	}
	b = b[k:]
	_, k = lencInt(b)
	if k == 0 || k+2 > len(b) {
		return rows, 0
	}
	return rows, binary.LittleEndian.Uint16(b[k:])
}

// eofStatus returns the status of an EOF packet.
func eofStatus(body []byte, n int) (uint16, bool) {
	if len(body) < 5 || body[0] != mysql.EOF_HEADER {
		return 0, false
	}
	return binary.LittleEndian.Uint16(body[3:5]), true
}

func malformed(format string, args ...any) error { return sqlcore.Malformedf(format, args...) }
