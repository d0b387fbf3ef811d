package pgwire

import (
	"bytes"
	"time"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// Bounds of the per-connection caches.
const (
	maxTextCache  = 512
	maxShapeCache = 1024
	maxNames      = 10000 // named statements or portals kept per connection
	// maxSQL is the longest statement text kept; a longer one is counted,
	// with its text (and so its fingerprint) cut there.
	maxSQL = 1 << 20
)

type portal struct {
	st   stmtRef
	bind uint64
}

// clientSide follows what the client sends.
type clientSide struct {
	s   *session
	now time.Time
	fr  framer
	sc  scanner

	unnamed  stmtRef
	stmts    map[string]*stmtRef
	portal   portal // the unnamed portal
	portals  map[string]*portal
	bindSeq  uint64
	texts    map[string]stmtRef              // Parse text -> statement
	shapes   map[string]*sqlcore.Fingerprint // shape -> fingerprint
	keepText bool                            // whether statements carry their SQL text
}

var _ handler = (*clientSide)(nil)

func (c *clientSide) feed(b []byte, now time.Time) error {
	c.now = now
	return c.fr.feed(b, c)
}

func (c *clientSide) want(typ byte, n int) int {
	switch typ {
	case 'Q', 'P':
		return min(n, maxSQL+1024)
	case 'B', 'E', 'C', 'D':
		return min(n, 1<<16)
	}
	return 0
}

func (c *clientSide) message(typ byte, body []byte, n int) error {
	switch typ {
	case 'Q':
		return c.query(body, n)
	case 'P':
		return c.parse(body, n)
	case 'B':
		return c.bind(body)
	case 'E':
		return c.execute(body)
	case 'D':
		if len(body) < 2 || (body[0] != 'S' && body[0] != 'P') {
			return sqlcore.Malformedf("Describe: bad format")
		}
		c.s.enqueue(pend{kind: 'D', sent: c.now})
	case 'C':
		return c.close(body)
	case 'S':
		c.s.enqueue(pend{kind: 'S', sent: c.now})
	case 'F':
		c.s.enqueue(pend{kind: 'F', sent: c.now})
	}
	return nil
}

// cstring splits a NUL-terminated string off b.
func cstring(b []byte) (s, rest []byte, ok bool) {
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, false
	}
	return b[:i], b[i+1:], true
}

// sqlText returns the SQL text at the start of b, at most maxSQL bytes of
// it. When b holds the whole message its text must be terminated (ok is
// false otherwise); when b holds only the start of a longer message, the
// text runs to its terminator or to the end of b.
func sqlText(b []byte, whole bool) (text []byte, ok bool) {
	text = b
	if whole {
		if text, _, ok = cstring(b); !ok {
			return nil, false
		}
	} else if i := bytes.IndexByte(b, 0); i >= 0 {
		text = b[:i]
	}
	if len(text) > maxSQL {
		text = text[:maxSQL]
	}
	return text, true
}

func (c *clientSide) query(body []byte, n int) error {
	text, ok := sqlText(body, len(body) == n)
	if !ok {
		return sqlcore.Malformedf("Query: text not terminated")
	}
	p := pend{kind: 'Q', sent: c.now, win: c.s.rec.Window()}
	c.sc.scan(text, true)
	var whole string
	if c.keepText {
		whole = string(text)
	}
	trace := c.sc.traceString()
	switch len(c.sc.spans) {
	case 0:
		p.st = stmtRef{sql: whole, fp: c.fingerprint(nil), trace: trace}
	case 1:
		p.st = c.ref(whole, text, c.sc.spans[0], trace, true)
	default:
		p.st = c.ref(whole, text, c.sc.spans[0], trace, false)
		p.more = make([]stmtRef, len(c.sc.spans)-1)
		for i, sp := range c.sc.spans[1:] {
			p.more[i] = c.ref(whole, text, sp, trace, false)
		}
	}
	c.s.enqueue(p)
	return nil
}

// ref makes the stmtRef of one statement of a query string; whole is the
// query string (when texts are kept), only says it is the only statement.
func (c *clientSide) ref(whole string, text []byte, sp span, trace string, only bool) stmtRef {
	r := stmtRef{fp: c.fingerprint(c.sc.shape[sp.shapeStart:sp.shapeEnd]), trace: trace}
	if whole != "" {
		if only {
			r.sql = whole
		} else {
			r.sql = whole[sp.start:sp.end]
		}
	}
	return r
}

// fingerprint returns the fingerprint of a shape, from the connection's
// cache or the proxy's.
func (c *clientSide) fingerprint(shape []byte) *sqlcore.Fingerprint {
	if fp := c.shapes[string(shape)]; fp != nil {
		return fp
	}
	fp := c.s.rec.Lookup(shape)
	if c.shapes == nil || len(c.shapes) >= maxShapeCache {
		c.shapes = make(map[string]*sqlcore.Fingerprint)
	}
	c.shapes[string(shape)] = fp
	return fp
}

func (c *clientSide) parse(body []byte, n int) error {
	name, rest, ok := cstring(body)
	if !ok {
		return sqlcore.Malformedf("Parse: statement name not terminated")
	}
	text, ok := sqlText(rest, len(body) == n)
	if !ok {
		return sqlcore.Malformedf("Parse: query not terminated")
	}
	ref, ok := c.texts[string(text)]
	if !ok {
		c.sc.scan(text, false)
		ref = stmtRef{sql: string(text), fp: c.fingerprint(c.sc.shape[c.sc.spans[0].shapeStart:c.sc.spans[0].shapeEnd]), trace: c.sc.traceString()}
		if !c.keepText {
			ref.sql = ""
		}
		if c.texts == nil || len(c.texts) >= maxTextCache {
			c.texts = make(map[string]stmtRef)
		}
		c.texts[string(text)] = ref
	}
	if len(name) == 0 {
		c.unnamed = ref
	} else if slot := c.stmts[string(name)]; slot != nil {
		*slot = ref
	} else {
		if c.stmts == nil || len(c.stmts) >= maxNames {
			c.stmts = make(map[string]*stmtRef)
		}
		r := ref
		c.stmts[string(name)] = &r
	}
	c.s.enqueue(pend{kind: 'P', sent: c.now, win: c.s.rec.Window(), st: ref})
	return nil
}

// statement returns the statement with the given name.
func (c *clientSide) statement(name []byte) stmtRef {
	if len(name) == 0 {
		if c.unnamed.fp == nil {
			return c.unknown(name)
		}
		return c.unnamed
	}
	if r := c.stmts[string(name)]; r != nil {
		return *r
	}
	return c.unknown(name)
}

// unknown stands for a statement prepared before the proxy saw the
// connection, or never.
func (c *clientSide) unknown(name []byte) stmtRef {
	return stmtRef{fp: c.s.rec.Named("(unknown prepared statement " + string(name) + ")")}
}

func (c *clientSide) bind(body []byte) error {
	pname, rest, ok := cstring(body)
	if !ok {
		return sqlcore.Malformedf("Bind: portal name not terminated")
	}
	sname, _, ok := cstring(rest)
	if !ok {
		return sqlcore.Malformedf("Bind: statement name not terminated")
	}
	st := c.statement(sname)
	c.bindSeq++
	if len(pname) == 0 {
		c.portal = portal{st: st, bind: c.bindSeq}
	} else if slot := c.portals[string(pname)]; slot != nil {
		*slot = portal{st: st, bind: c.bindSeq}
	} else {
		if c.portals == nil || len(c.portals) >= maxNames {
			c.portals = make(map[string]*portal)
		}
		c.portals[string(pname)] = &portal{st: st, bind: c.bindSeq}
	}
	c.s.enqueue(pend{kind: 'B', sent: c.now, win: c.s.rec.Window(), st: st})
	return nil
}

func (c *clientSide) execute(body []byte) error {
	pname, rest, ok := cstring(body)
	if !ok || len(rest) != 4 {
		return sqlcore.Malformedf("Execute: bad format")
	}
	var pt portal
	if len(pname) == 0 {
		pt = c.portal
	} else if slot := c.portals[string(pname)]; slot != nil {
		pt = *slot
	}
	if pt.st.fp == nil {
		pt.st = stmtRef{fp: c.s.rec.Named("(unknown portal " + string(pname) + ")")}
	}
	c.s.enqueue(pend{kind: 'E', sent: c.now, win: c.s.rec.Window(), st: pt.st, bind: pt.bind})
	return nil
}

func (c *clientSide) close(body []byte) error {
	if len(body) < 2 || (body[0] != 'S' && body[0] != 'P') {
		return sqlcore.Malformedf("Close: bad format")
	}
	name, _, ok := cstring(body[1:])
	if !ok {
		return sqlcore.Malformedf("Close: name not terminated")
	}
	p := pend{kind: 'C', sent: c.now}
	if body[0] == 'S' {
		if len(name) == 0 {
			c.unnamed = stmtRef{}
		} else {
			delete(c.stmts, string(name))
		}
	} else {
		if len(name) == 0 {
			p.bind = c.portal.bind
			c.portal = portal{}
		} else if slot := c.portals[string(name)]; slot != nil {
			p.bind = slot.bind
			delete(c.portals, string(name))
		}
	}
	c.s.enqueue(p)
	return nil
}
