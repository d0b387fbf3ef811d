package mysqlwire

import (
	"encoding/binary"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// Bounds of the per-connection caches.
const (
	maxTextCache  = 512
	maxShapeCache = 1024
	maxStmts      = 10000 // prepared statements kept per connection
	// maxSQL is the longest statement text kept; a longer one is counted,
	// with its text (and so its fingerprint) cut there.
	maxSQL = 1 << 20
)

// clientSide follows the commands the client sends.
type clientSide struct {
	s   *session
	now time.Time
	fr  framer
	sc  scanner

	texts    map[string]stmtRef              // prepared text -> statement
	shapes   map[string]*sqlcore.Fingerprint // shape -> fingerprint
	keepText bool                            // whether statements carry their SQL text
}

var _ handler = (*clientSide)(nil)

func (c *clientSide) feed(b []byte, now time.Time) error {
	c.now = now
	return c.fr.feed(b, c)
}

func (c *clientSide) want(seq byte, n int) int {
	if seq != 0 {
		return 0 // the rest of a command: a split packet, LOCAL INFILE data, authentication
	}
	return min(n, maxSQL+1)
}

func (c *clientSide) packet(seq byte, body []byte, n int, cont bool) error {
	if seq != 0 || cont {
		return nil
	}
	if n == 0 {
		return sqlcore.Malformedf("command packet: empty")
	}
	cmd := body[0]
	switch cmd {
	case mysql.COM_QUERY:
		c.query(body[1:])
	case mysql.COM_STMT_PREPARE:
		c.prepare(body[1:])
	case mysql.COM_STMT_EXECUTE, mysql.COM_STMT_FETCH, mysql.COM_STMT_RESET, mysql.COM_STMT_CLOSE:
		if len(body) < 5 {
			return sqlcore.Malformedf("command 0x%02x: %d bytes, want a statement id", cmd, len(body))
		}
		p := pend{cmd: cmd, sent: c.now, id: binary.LittleEndian.Uint32(body[1:5]), noReply: cmd == mysql.COM_STMT_CLOSE}
		if cmd == mysql.COM_STMT_EXECUTE {
			p.win = c.s.rec.Window()
		}
		c.s.enqueue(p)
	case mysql.COM_STMT_SEND_LONG_DATA, mysql.COM_QUIT:
		// No answer, and nothing ran.
	case mysql.COM_INIT_DB:
		c.initDB(body[1:])
	case mysql.COM_BINLOG_DUMP, mysql.COM_BINLOG_DUMP_GTID, mysql.COM_TABLE_DUMP, mysql.COM_CLONE, comMulti:
		// Answers this package does not follow: relay the rest as it is.
		c.s.opaque.Store(true)
	default:
		c.s.enqueue(pend{cmd: cmd, sent: c.now})
	}
	return nil
}

// comMulti is MariaDB's COM_MULTI (several commands in one packet), which
// the handshake keeps clients from using.
const comMulti = 0xfe

func (c *clientSide) query(text []byte) {
	if len(text) > maxSQL {
		text = text[:maxSQL]
	}
	p := pend{cmd: mysql.COM_QUERY, sent: c.now, win: c.s.rec.Window()}
	c.sc.noBackslash = c.s.noBackslash.Load()
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
		p.st = c.ref(whole, c.sc.spans[0], trace, true)
	default:
		p.st = c.ref(whole, c.sc.spans[0], trace, false)
		p.more = make([]stmtRef, len(c.sc.spans)-1)
		for i, sp := range c.sc.spans[1:] {
			p.more[i] = c.ref(whole, sp, trace, false)
		}
	}
	c.s.enqueue(p)
}

// ref makes the stmtRef of one statement of a query string; whole is the
// query string (when texts are kept), only says it is the only statement.
func (c *clientSide) ref(whole string, sp span, trace string, only bool) stmtRef {
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

// statement returns the stmtRef of a whole text (a prepared statement's),
// from the connection's cache when it was seen before.
func (c *clientSide) statement(text []byte) stmtRef {
	if len(text) > maxSQL {
		text = text[:maxSQL]
	}
	if ref, ok := c.texts[string(text)]; ok {
		return ref
	}
	c.sc.noBackslash = c.s.noBackslash.Load()
	c.sc.scan(text, false)
	sp := c.sc.spans[0]
	ref := stmtRef{fp: c.fingerprint(c.sc.shape[sp.shapeStart:sp.shapeEnd]), trace: c.sc.traceString()}
	if c.keepText {
		ref.sql = string(text)
	}
	if c.texts == nil || len(c.texts) >= maxTextCache {
		c.texts = make(map[string]stmtRef)
	}
	c.texts[string(text)] = ref
	return ref
}

func (c *clientSide) prepare(text []byte) {
	c.s.enqueue(pend{cmd: mysql.COM_STMT_PREPARE, sent: c.now, win: c.s.rec.Window(), st: c.statement(text)})
}

// initDB counts COM_INIT_DB as the USE statement it is.
func (c *clientSide) initDB(name []byte) {
	text := "USE `" + strings.ReplaceAll(string(name), "`", "``") + "`"
	c.s.enqueue(pend{cmd: mysql.COM_INIT_DB, sent: c.now, win: c.s.rec.Window(), st: c.statement([]byte(text))})
}
