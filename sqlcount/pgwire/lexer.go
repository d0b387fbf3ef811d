package pgwire

import (
	"bytes"

	"github.com/replaykit/replay/sqlcount/sqlcore"
)

// A span is one statement of a query string: its text, trimmed of
// surrounding white space, and its shape (see scanner).
type span struct {
	start, end           int // text[start:end]
	shapeStart, shapeEnd int // scanner.shape[shapeStart:shapeEnd]
}

// scanner lexes PostgreSQL query strings just enough to split them into
// statements on top-level semicolons, to find a sqlcommenter traceparent and
// to produce each statement's shape: the text with comments removed, white
// space collapsed and literals and parameters replaced by 0 (a negative
// number included). Equal shapes have equal fingerprints, so the shape is
// the key of the fingerprint cache and the fingerprinter's input.
//
// It respects single quotes (quotes doubled inside, and backslash escapes
// in E-strings), double-quoted identifiers, dollar quotes and nested block
// comments. A scanner is reused; it allocates only while its buffers grow.
type scanner struct {
	spans []span
	shape []byte
	// trace is the trace id of the first valid traceparent found in a
	// comment, 32 lower-case hex digits, or empty.
	trace    [32]byte
	hasTrace bool

	// state of the current statement's shape
	prev      tokKind // kind of the last token written to the shape
	prevWord  []byte  // the last word, when prev is tokWord
	needSpace bool
	// depth of BEGIN ATOMIC … END blocks (SQL-standard function bodies),
	// inside which semicolons don't end the statement, as in psql.
	depth int
}

type tokKind uint8

const (
	tokNone tokKind = iota
	tokWord
	tokOperand // literal, parameter, quoted identifier, ')' or ']'
	tokOperator
	tokOpen // '(' '[' ','
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
	i := 0
	for i < n {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			s.needSpace = true
			i++
		case c == '-' && i+1 < n && text[i+1] == '-':
			j := i + 2
			for j < n && text[j] != '\n' {
				j++
			}
			s.comment(text[i+2 : j])
			s.needSpace = true
			i = j
		case c == '/' && i+1 < n && text[i+1] == '*':
			j := skipBlockComment(text, i)
			s.comment(text[i:j])
			s.needSpace = true
			i = j
		case c == ';' && split && s.depth == 0:
			s.endStatement(text, stmtStart, i)
			i++
			stmtStart = i
			s.startStatement()
		case c == '\'':
			j := skipString(text, i, false)
			s.literal()
			i = j
		case c == '"':
			j := skipQuotedIdent(text, i)
			s.emit(tokOperand, text[i:j])
			i = j
		case c == '$':
			i = s.dollar(text, i)
		case isDigit(c) || (c == '.' && i+1 < n && isDigit(text[i+1])):
			i = skipNumber(text, i)
			s.literal()
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentCont(text[j]) {
				j++
			}
			word := text[i:j]
			// Prefixed string literals: E'...', B'...', X'...', N'...', U&'...'.
			if j < n && text[j] == '\'' && len(word) == 1 {
				switch word[0] | 0x20 {
				case 'e':
					i = skipString(text, j, true)
					s.literal()
					continue
				case 'b', 'x', 'n':
					i = skipString(text, j, false)
					s.literal()
					continue
				}
			}
			if len(word) == 1 && word[0]|0x20 == 'u' && j+1 < n && text[j] == '&' && text[j+1] == '\'' {
				i = skipString(text, j+1, false)
				s.literal()
				continue
			}
			s.block(word)
			s.emit(tokWord, word)
			i = j
		case isOperatorChar(c):
			j := operatorEnd(text, i)
			op := text[i:j]
			if len(op) == 1 && (c == '-' || c == '+') && s.unaryContext() {
				// A sign before a number folds into the literal.
				k := j
				for k < n && isSpace(text[k]) {
					k++
				}
				if k < n && (isDigit(text[k]) || (text[k] == '.' && k+1 < n && isDigit(text[k+1]))) {
					i = skipNumber(text, k)
					s.literal()
					continue
				}
			}
			s.emit(tokOperator, op)
			if c == '-' || c == '+' {
				// Keep "- 0" apart, or the fingerprinter reads "-0" as one
				// negative number.
				s.needSpace = true
			}
			i = j
		case c == '(' || c == '[' || c == ',':
			s.emit(tokOpen, text[i:i+1])
			i++
		case c == ')' || c == ']':
			s.emit(tokOperand, text[i:i+1])
			i++
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

// dollar scans from the '$' at i a parameter ($1), a dollar-quoted string
// ($tag$...$tag$) or else the lone '$', and returns where it ends.
func (s *scanner) dollar(text []byte, i int) int {
	n := len(text)
	if i+1 < n && isDigit(text[i+1]) {
		j := i + 1
		for j < n && isDigit(text[j]) {
			j++
		}
		s.literal()
		return j
	}
	if j, ok := skipDollarQuote(text, i); ok {
		s.literal()
		return j
	}
	s.emit(tokOther, text[i:i+1])
	return i + 1
}

func (s *scanner) startStatement() {
	s.prev = tokNone
	s.prevWord = nil
	s.needSpace = false
	s.depth = 0
}

// block follows BEGIN ATOMIC … END blocks (with CASE … END inside).
func (s *scanner) block(word []byte) {
	switch len(word) {
	case 6:
		if s.prev == tokWord && asciiEqualFold(word, "atomic") && len(s.prevWord) == 5 && asciiEqualFold(s.prevWord, "begin") {
			s.depth++
		}
	case 4:
		if s.depth > 0 && asciiEqualFold(word, "case") {
			s.depth++
		}
	case 3:
		if s.depth > 0 && asciiEqualFold(word, "end") {
			s.depth--
		}
	}
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

var zero = []byte{'0'}

func (s *scanner) literal() { s.emit(tokOperand, zero) }

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

var operandKeywords = []string{"select", "where", "and", "or", "not", "then", "else", "when", "case",
	"limit", "offset", "between", "having", "on", "returning", "set", "by", "return", "is", "like", "in", "values", "fetch", "first"}

func isOperandKeyword(w []byte) bool {
	if len(w) > 9 {
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

func skipBlockComment(text []byte, i int) int {
	depth := 0
	n := len(text)
	for i < n {
		if text[i] == '/' && i+1 < n && text[i+1] == '*' {
			depth++
			i += 2
			continue
		}
		if text[i] == '*' && i+1 < n && text[i+1] == '/' {
			depth--
			i += 2
			if depth == 0 {
				return i
			}
			continue
		}
		i++
	}
	return n
}

// skipString returns the index after the string literal starting at the
// quote text[i]; backslash says whether backslash escapes (E”).
func skipString(text []byte, i int, backslash bool) int {
	n := len(text)
	i++
	for i < n {
		switch text[i] {
		case '\\':
			if backslash {
				i += 2
				continue
			}
		case '\'':
			if i+1 < n && text[i+1] == '\'' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return n
}

func skipQuotedIdent(text []byte, i int) int {
	n := len(text)
	i++
	for i < n {
		if text[i] == '"' {
			if i+1 < n && text[i+1] == '"' {
				i += 2
				continue
			}
			return i + 1
		}
		i++
	}
	return n
}

// skipDollarQuote reports whether text[i] starts a dollar-quoted string
// ($$…$$ or $tag$…$tag$) and returns the index after it.
func skipDollarQuote(text []byte, i int) (int, bool) {
	n := len(text)
	j := i + 1
	if j < n && isIdentStart(text[j]) {
		for j < n && isIdentCont(text[j]) && text[j] != '$' {
			j++
		}
	}
	if j >= n || text[j] != '$' {
		return 0, false
	}
	tag := text[i : j+1]
	k := bytes.Index(text[j+1:], tag)
	if k < 0 {
		return n, true
	}
	return j + 1 + k + len(tag), true
}

func skipNumber(text []byte, i int) int {
	n := len(text)
	if text[i] == '0' && i+1 < n {
		switch text[i+1] | 0x20 {
		case 'x', 'o', 'b':
			j := i + 2
			for j < n && (isHex(text[j]) || text[j] == '_') {
				j++
			}
			return j
		}
	}
	j := i
	for j < n && (isDigit(text[j]) || text[j] == '_') {
		j++
	}
	if j < n && text[j] == '.' && !(j+1 < n && text[j+1] == '.') {
		j++
		for j < n && (isDigit(text[j]) || text[j] == '_') {
			j++
		}
	}
	if j < n && text[j]|0x20 == 'e' {
		k := j + 1
		if k < n && (text[k] == '+' || text[k] == '-') {
			k++
		}
		if k < n && isDigit(text[k]) {
			for k < n && isDigit(text[k]) {
				k++
			}
			j = k
		}
	}
	return j
}

// operatorEnd returns the end of the operator starting at text[i], following
// PostgreSQL's rules: a comment start ends it, and a multi-character
// operator ends in + or - only if it contains one of ~ ! @ # % ^ & | ` ?.
func operatorEnd(text []byte, i int) int {
	n := len(text)
	j := i
	special := false
	for j < n && isOperatorChar(text[j]) {
		if j > i && ((text[j] == '-' && text[j-1] == '-') || (text[j] == '*' && text[j-1] == '/')) {
			j--
			break
		}
		switch text[j] {
		case '~', '!', '@', '#', '%', '^', '&', '|', '`', '?':
			special = true
		}
		j++
	}
	if !special {
		for j > i+1 && (text[j-1] == '+' || text[j-1] == '-') {
			j--
		}
	}
	if j <= i {
		j = i + 1
	}
	return j
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
func isDigit(c byte) bool      { return '0' <= c && c <= '9' }
func isHex(c byte) bool        { return isDigit(c) || ('a' <= c|0x20 && c|0x20 <= 'f') }
func isIdentStart(c byte) bool { return c == '_' || ('a' <= c|0x20 && c|0x20 <= 'z') || c >= 0x80 }
func isIdentCont(c byte) bool  { return isIdentStart(c) || isDigit(c) || c == '$' }
func isOperatorChar(c byte) bool {
	switch c {
	case '+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '%', '^', '&', '|', '`', '?':
		return true
	}
	return false
}

func unhex(c byte) byte {
	if isDigit(c) {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
