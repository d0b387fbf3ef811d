package mysqlwire

import "github.com/replaykit/replay/sqlcount/sqlcore"

// A span is one statement of a query string: its text, trimmed of
// surrounding white space, and its shape (see scanner).
type span struct {
	start, end           int // text[start:end]
	shapeStart, shapeEnd int // scanner.shape[shapeStart:shapeEnd]
}

// scanner lexes MySQL query strings just enough to split them into
// statements on top-level semicolons, to find a sqlcommenter traceparent and
// to produce each statement's shape: the text with comments removed, white
// space collapsed and literals and parameters replaced by "?" (a negative
// number included). Equal shapes have equal fingerprints, so the shape is
// the key of the fingerprint cache and go-sqllexer's input.
//
// It respects single- and double-quoted strings (quotes doubled inside, and
// backslash escapes unless the server said NO_BACKSLASH_ESCAPES), backquoted
// identifiers, and the three comment forms (/* */, "-- " and #). A
// statement that begins with CREATE is not split (a procedure's body holds
// semicolons). A scanner is reused; it allocates only while its buffers
// grow.
type scanner struct {
	spans []span
	shape []byte
	// noBackslash: backslashes in strings are plain characters
	// (sql_mode NO_BACKSLASH_ESCAPES).
	noBackslash bool

	trace    [32]byte
	hasTrace bool

	prev      tokKind
	prevWord  []byte
	needSpace bool
	create    bool // the statement began with CREATE
}

type tokKind uint8

const (
	tokNone tokKind = iota
	tokWord
	tokOperand // literal, parameter, quoted identifier, ')'
	tokOperator
	tokOpen // '(' ','
	tokOther
)

// scan lexes text. With split, every top-level semicolon ends a statement
// and statements that are empty (only white space and comments) are dropped;
// without, the whole text is one span (possibly with an empty shape).
func (s *scanner) scan(text []byte, split bool) {
	s.spans = s.spans[:0]
	s.shape = s.shape[:0]
	s.hasTrace = false
	s.startStatement()
	stmtStart := 0
	n := len(text)
	for i := 0; i < n; {
		c := text[i]
		switch {
		case isSpace(c):
			s.needSpace = true
			i++
		case c == '#' || (c == '-' && i+1 < n && text[i+1] == '-' && (i+2 == n || text[i+2] <= ' ')):
			j := i + 1
			for j < n && text[j] != '\n' {
				j++
			}
			s.comment(text[i:j])
			s.needSpace = true
			i = j
		case c == '/' && i+1 < n && text[i+1] == '*':
			j := i + 2
			for j+1 < n && !(text[j] == '*' && text[j+1] == '/') {
				j++
			}
			j = min(j+2, n)
			s.comment(text[i:j])
			s.needSpace = true
			i = j
		case c == ';' && split && !s.create:
			s.endStatement(text, stmtStart, i)
			i++
			stmtStart = i
			s.startStatement()
		case c == '\'' || c == '"':
			i = s.skipString(text, i)
			s.literal()
		case c == '`':
			j := i + 1
			for j < n {
				if text[j] == '`' {
					if j+1 < n && text[j+1] == '`' {
						j += 2
						continue
					}
					j++
					break
				}
				j++
			}
			s.emit(tokOperand, text[i:min(j, n)])
			i = min(j, n)
		case c == '?':
			s.literal()
			i++
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(text[i+1])):
			i = skipNumber(text, i)
			s.literal()
		case isIdentStart(c):
			i = s.word(text, i)
		case c == '(' || c == ',':
			s.emit(tokOpen, text[i:i+1])
			i++
		case c == ')':
			s.emit(tokOperand, text[i:i+1])
			i++
		case isOperatorChar(c):
			i = s.operator(text, i)
		default:
			s.emit(tokOther, text[i:i+1])
			i++
		}
	}
	s.endStatement(text, stmtStart, n)
	if !split && len(s.spans) == 0 {
		s.spans = append(s.spans, span{start: 0, end: n, shapeStart: len(s.shape), shapeEnd: len(s.shape)})
	}
}

// word scans an identifier or keyword at i, or a prefixed string literal
// (X'..', B'..', N'..', _utf8mb4'..'), and returns where it ends.
func (s *scanner) word(text []byte, i int) int {
	n := len(text)
	j := i + 1
	for j < n && isIdentCont(text[j]) {
		j++
	}
	w := text[i:j]
	if j < n && text[j] == '\'' {
		if (len(w) == 1 && (w[0]|0x20 == 'x' || w[0]|0x20 == 'b' || w[0]|0x20 == 'n')) || w[0] == '_' {
			k := s.skipString(text, j)
			s.literal()
			return k
		}
	}
	if s.prev == tokNone && len(w) == 6 && asciiEqualFold(w, "create") {
		s.create = true
	}
	s.emit(tokWord, w)
	return j
}

// operator scans an operator at i; a sign before a number, where an operand
// begins, folds into the literal.
func (s *scanner) operator(text []byte, i int) int {
	n := len(text)
	c := text[i]
	j := i + 1
	for _, op := range multiOperators {
		if len(text)-i >= len(op) && string(text[i:i+len(op)]) == op {
			j = i + len(op)
			break
		}
	}
	if j-i == 1 && (c == '-' || c == '+') {
		if s.unaryContext() {
			k := j
			for k < n && isSpace(text[k]) {
				k++
			}
			if k < n && (isDigit(text[k]) || (text[k] == '.' && k+1 < n && isDigit(text[k+1]))) {
				k = skipNumber(text, k)
				s.literal()
				return k
			}
		}
		// Spaced on both sides, so go-sqllexer does not read "+?" as a
		// signed number.
		s.needSpace = true
		s.emit(tokOperator, text[i:j])
		s.needSpace = true
		return j
	}
	s.emit(tokOperator, text[i:j])
	return j
}

// skipString returns the index after the string literal whose quote is at i.
func (s *scanner) skipString(text []byte, i int) int {
	q := text[i]
	n := len(text)
	for j := i + 1; j < n; j++ {
		switch text[j] {
		case '\\':
			if !s.noBackslash {
				j++
			}
		case q:
			if j+1 < n && text[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return n
}

func skipNumber(text []byte, i int) int {
	n := len(text)
	if text[i] == '0' && i+1 < n && (text[i+1]|0x20 == 'x' || text[i+1]|0x20 == 'b') {
		j := i + 2
		for j < n && isHex(text[j]) {
			j++
		}
		return j
	}
	j := i
	for j < n && (isDigit(text[j]) || text[j] == '.') {
		j++
	}
	if j < n && text[j]|0x20 == 'e' {
		k := j + 1
		if k < n && (text[k] == '+' || text[k] == '-') {
			k++
		}
		if k < n && isDigit(text[k]) {
			j = k
			for j < n && isDigit(text[j]) {
				j++
			}
		}
	}
	// 1abc is an identifier in MySQL; keep the rest as part of the literal.
	for j < n && isIdentCont(text[j]) {
		j++
	}
	return j
}

func (s *scanner) startStatement() {
	s.prev = tokNone
	s.prevWord = nil
	s.needSpace = false
	s.create = false
}

// endStatement closes the statement text[start:end]; its shape runs from the
// last span's shape end to the end of s.shape.
func (s *scanner) endStatement(text []byte, start, end int) {
	shapeStart := 0
	if k := len(s.spans); k > 0 {
		shapeStart = s.spans[k-1].shapeEnd
	}
	if len(s.shape) == shapeStart {
		return // only white space and comments: the server runs nothing
	}
	for start < end && isSpace(text[start]) {
		start++
	}
	for end > start && isSpace(text[end-1]) {
		end--
	}
	s.spans = append(s.spans, span{start: start, end: end, shapeStart: shapeStart, shapeEnd: len(s.shape)})
}

func (s *scanner) emit(k tokKind, tok []byte) {
	if s.needSpace && s.prev != tokNone {
		s.shape = append(s.shape, ' ')
	}
	s.needSpace = false
	s.shape = append(s.shape, tok...)
	s.prev = k
	if k == tokWord {
		s.prevWord = tok
	}
}

// multiOperators are MySQL's operators of more than one character, the
// longest first; others are one character each.
var multiOperators = []string{"<=>", "->>", "<=", ">=", "<>", "!=", ":=", "||", "&&", "<<", ">>", "->", "@@"}

var param = []byte{'?'}

func (s *scanner) literal() { s.emit(tokOperand, param) }

// unaryContext reports whether a + or - here is a sign rather than an
// operator: after an operator, an opening bracket, a comma, the start, or a
// keyword after which an operand begins.
func (s *scanner) unaryContext() bool {
	switch s.prev {
	case tokNone, tokOperator, tokOpen:
		return true
	case tokWord:
		return isOperandKeyword(s.prevWord)
	}
	return false
}

var operandKeywords = []string{"select", "where", "and", "or", "not", "then", "else", "when", "case", "xor",
	"limit", "offset", "between", "having", "on", "set", "by", "is", "like", "in", "values", "value", "interval", "div", "mod"}

func isOperandKeyword(w []byte) bool {
	if len(w) > 8 {
		return false
	}
	for _, k := range operandKeywords {
		if len(k) == len(w) && asciiEqualFold(w, k) {
			return true
		}
	}
	return false
}

func asciiEqualFold(b []byte, lower string) bool {
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// comment looks for a sqlcommenter traceparent in a comment's text.
func (s *scanner) comment(c []byte) {
	if s.hasTrace {
		return
	}
	if id, ok := sqlcore.TraceFromComment(c); ok {
		s.trace = id
		s.hasTrace = true
	}
}

// traceString returns the trace id found, or "".
func (s *scanner) traceString() string {
	if !s.hasTrace {
		return ""
	}
	return string(s.trace[:])
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isHex(c byte) bool   { return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }
func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || ('a' <= c|0x20 && c|0x20 <= 'z') || c >= 0x80
}
func isIdentCont(c byte) bool { return isIdentStart(c) || isDigit(c) }
func isOperatorChar(c byte) bool {
	switch c {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '%', '^', '&', '|', ':', '.':
		return true
	}
	return false
}
