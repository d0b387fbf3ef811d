package pgwire

import (
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/replaykit/replay/snapshots"
	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// suspension is an Execute whose portal was suspended (row limit reached):
// the statement completes at a later Execute of the same portal.
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

	rows      int64     // DataRows of the statement running
	lastDone  time.Time // when the last statement completed
	suspended map[uint64]suspension
	errResp   pgproto3.ErrorResponse
}

var _ handler = (*serverSide)(nil)

func (v *serverSide) feed(b []byte, now time.Time) error {
	v.now = now
	return v.fr.feed(b, v)
}

func (v *serverSide) want(typ byte, n int) int {
	switch typ {
	case 'C', 'E':
		return min(n, 1<<16)
	case 'Z':
		return min(n, 1)
	}
	return 0
}

func (v *serverSide) message(typ byte, body []byte, n int) error {
	switch typ {
	case 'D':
		v.rows++
	case 'C':
		tag, _, ok := cstring(body)
		if !ok {
			return sqlcore.Malformedf("CommandComplete: tag not terminated")
		}
		v.complete(tag, "")
	case 'I':
		v.complete(nil, "")
	case 'E':
		v.error(body)
	case 'Z':
		if n != 1 {
			return sqlcore.Malformedf("ReadyForQuery: bad length %d", n+4)
		}
		v.ready(body[0])
	case '1':
		v.popThrough('P')
	case '2':
		v.popThrough('B')
	case '3':
		if p, ok := v.popThrough('C'); ok && p.bind != 0 {
			v.finishSuspended(p.bind)
		}
	case 'T', 'n':
		v.s.mu.Lock()
		if f := v.s.q.front(); f != nil && f.kind == 'D' {
			v.s.q.pop()
		}
		v.s.mu.Unlock()
	case 's':
		v.suspend()
	}
	return nil
}

// popThrough removes pending messages up to and including the first of kind
// k, which it returns. With a well-behaved server it is the first one.
func (v *serverSide) popThrough(k byte) (pend, bool) {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	i := v.s.q.index(k)
	if i < 0 {
		return pend{}, false
	}
	for range i {
		v.s.q.pop()
	}
	p := *v.s.q.front()
	v.s.q.pop()
	return p, true
}

// complete handles the completion (CommandComplete, EmptyQueryResponse or
// ErrorResponse) of the statement running.
func (v *serverSide) complete(tag []byte, errText string) {
	v.s.mu.Lock()
	f := v.s.q.front()
	if f == nil || (f.kind != 'Q' && f.kind != 'E') {
		v.s.mu.Unlock()
		v.rows = 0
		return
	}
	var (
		st    stmtRef
		start time.Time
		win   = f.win
		bind  uint64
		proto = snapshots.ProtocolSimple
	)
	if f.kind == 'Q' {
		st = f.st
		// More completions than statements found in the text (the
		// server split it otherwise) go to the last statement known.
		if k := min(f.next, len(f.more)); k > 0 {
			st = f.more[k-1]
		}
		start = f.sent
		if f.next > 0 {
			start = f.nextStart
		}
		f.next++
		f.nextStart = v.now
	} else {
		st, start, bind, proto = f.st, f.sent, f.bind, snapshots.ProtocolExtended
		v.s.q.pop()
	}
	v.s.mu.Unlock()

	rows := v.rows
	v.rows = 0
	if n, ok := tagRows(tag); ok {
		rows = n
	}
	if start.Before(v.lastDone) {
		start = v.lastDone
	}
	if bind != 0 && len(v.suspended) > 0 {
		// The last run of a portal: its tag counts only that run's rows.
		if sp, ok := v.suspended[bind]; ok {
			start = sp.start
			rows += sp.rows
			delete(v.suspended, bind)
		}
	}
	v.lastDone = v.now
	v.s.rec.Record(st.stmt(), proto, win, start, v.now, rows, tag, errText)
}

// error handles an ErrorResponse: it completes the statement it is for, if
// any, and in the extended protocol drops what the server now skips: every
// message up to the next Sync.
func (v *serverSide) error(body []byte) {
	v.s.mu.Lock()
	f := v.s.q.front()
	if f == nil || f.kind == 'S' || f.kind == 'F' {
		v.s.mu.Unlock()
		v.rows = 0
		return
	}
	if f.kind == 'Q' {
		v.s.mu.Unlock()
		v.complete(nil, v.errorText(body))
		return
	}
	var (
		count = f.kind == 'E' || f.kind == 'P' || f.kind == 'B'
		st    = f.st
		start = f.sent
		win   = f.win
	)
	if i := v.s.q.index('S'); i >= 0 {
		for range i {
			v.s.q.pop()
		}
	} else {
		for v.s.q.size > 0 {
			v.s.q.pop()
		}
		v.s.skip = true
	}
	v.s.mu.Unlock()
	v.rows = 0
	if !count {
		return
	}
	if start.Before(v.lastDone) {
		start = v.lastDone
	}
	v.lastDone = v.now
	v.s.rec.Record(st.stmt(), snapshots.ProtocolExtended, win, start, v.now, 0, nil, v.errorText(body))
}

// errorText renders an ErrorResponse as "SQLSTATE: message".
func (v *serverSide) errorText(body []byte) string {
	if err := v.errResp.Decode(body); err != nil && v.errResp.Code == "" {
		return "XX000: malformed error response"
	}
	return v.errResp.Code + ": " + v.errResp.Message
}

func (v *serverSide) ready(status byte) {
	v.s.ready.Store(true)
	v.s.mu.Lock()
	for v.s.q.size > 0 {
		k := v.s.q.front().kind
		v.s.q.pop()
		if k == 'Q' || k == 'S' || k == 'F' {
			break
		}
	}
	v.s.mu.Unlock()
	v.rows = 0
	if status == 'I' && len(v.suspended) > 0 {
		// The transaction ended: its portals are gone.
		for bind := range v.suspended {
			v.finishSuspended(bind)
		}
	}
}

func (v *serverSide) suspend() {
	v.s.mu.Lock()
	f := v.s.q.front()
	if f == nil || f.kind != 'E' {
		v.s.mu.Unlock()
		return
	}
	p := *f
	v.s.q.pop()
	v.s.mu.Unlock()
	if v.suspended == nil {
		v.suspended = make(map[uint64]suspension)
	}
	sp, ok := v.suspended[p.bind]
	if !ok {
		sp = suspension{st: p.st, win: p.win, start: p.sent}
		if sp.start.Before(v.lastDone) {
			sp.start = v.lastDone
		}
	}
	sp.rows += v.rows
	v.rows = 0
	v.suspended[p.bind] = sp
	v.lastDone = v.now
}

// finishSuspended counts a suspended portal that was closed before it ran
// to completion.
func (v *serverSide) finishSuspended(bind uint64) {
	sp, ok := v.suspended[bind]
	if !ok {
		return
	}
	delete(v.suspended, bind)
	v.s.rec.Record(sp.st.stmt(), snapshots.ProtocolExtended, sp.win, sp.start, v.now, sp.rows, nil, "")
}

// tagRows returns the row count of a command tag ("SELECT 5", "INSERT 0 5").
func tagRows(tag []byte) (int64, bool) {
	i := len(tag)
	for i > 0 && isDigit(tag[i-1]) {
		i--
	}
	if i == len(tag) || i == 0 || tag[i-1] != ' ' || len(tag)-i > 18 {
		return 0, false
	}
	var n int64
	for _, c := range tag[i:] {
		n = n*10 + int64(c-'0')
	}
	return n, true
}
