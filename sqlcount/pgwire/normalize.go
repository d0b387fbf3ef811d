package pgwire

import (
	"slices"
	"strings"
)

// A token of a shape, for normalising it into a fingerprint.
type ntok struct {
	kind ntokKind
	text string
}

type ntokKind uint8

const (
	nWord  ntokKind = iota // keyword or identifier, quoted or not
	nParam                 // a folded literal or parameter: "?"
	nOp                    // an operator: = ->> || < …
	nOpen                  // ( or [
	nClose                 // ) or ]
	nComma                 // ,
	nDot                   // . of a qualified name
	nCast                  // ::
	nColon                 // : of an array slice
	nOther                 // ; $ and anything else
)

var paramTok = ntok{kind: nParam, text: "?"}

// normalize turns a shape (see scanner) into a fingerprint: literals,
// parameters and booleans become "?", lists of them fold to one, repeated
// rows and tuples fold to one, and the tokens are laid out one way whatever
// the original spacing:
//
//	select json_build_object(?::text, (?)) FROM t WHERE id IN (?) AND x = ANY(?)
//
// A function call's parenthesis follows its name and keeps every argument
// ("coalesce(?, ?)"); a keyword's is set apart ("IN (?)", "VALUES (?)",
// "EXISTS (SELECT …)"), and so is a table's column list ("INSERT INTO t (a,
// b)"). Casts, qualified names and subscripts are written without spaces
// ("?::int[]", "t.a", "a[?]"), operators with one on each side. A "?" in the
// shape (as an older fingerprint has) counts as a parameter, so normalising
// a fingerprint again gives it back.
func normalize(shape string) string {
	toks := lexShape(shape, nil)
	for len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	toks = foldLists(toks)
	return render(toks)
}

// lexShape splits a shape into tokens, appending them to dst.
func lexShape(shape string, dst []ntok) []ntok {
	s := shape
	n := len(s)
	i := 0
	for i < n {
		c := s[i]
		switch {
		case isSpace(c):
			i++
		case c == '"':
			j := skipQuotedIdent([]byte(s), i)
			dst = append(dst, ntok{nWord, s[i:j]})
			i = j
		case isDigit(c):
			j := i + 1
			for j < n && (isDigit(s[j]) || s[j] == '.') {
				j++
			}
			dst = append(dst, paramTok)
			i = j
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentCont(s[j]) {
				j++
			}
			w := s[i:j]
			if strings.EqualFold(w, "true") || strings.EqualFold(w, "false") {
				dst = append(dst, paramTok)
			} else {
				dst = append(dst, ntok{nWord, w})
			}
			i = j
		case c == ':' && i+1 < n && s[i+1] == ':':
			dst = append(dst, ntok{nCast, "::"})
			i += 2
		case c == ':' && i+1 < n && s[i+1] == '=':
			dst = append(dst, ntok{nOp, ":="})
			i += 2
		case c == ':':
			dst = append(dst, ntok{nColon, ":"})
			i++
		case isOperatorChar(c):
			j := operatorEnd([]byte(s), i)
			if j == i+1 && c == '?' {
				dst = append(dst, paramTok)
			} else {
				dst = append(dst, ntok{nOp, s[i:j]})
			}
			i = j
		case c == '(' || c == '[':
			dst = append(dst, ntok{nOpen, s[i : i+1]})
			i++
		case c == ')' || c == ']':
			dst = append(dst, ntok{nClose, s[i : i+1]})
			i++
		case c == ',':
			dst = append(dst, ntok{nComma, ","})
			i++
		case c == '.':
			dst = append(dst, ntok{nDot, "."})
			i++
		default:
			dst = append(dst, ntok{nOther, s[i : i+1]})
			i++
		}
	}
	return dst
}

// closing returns the index of the token closing the group opened at
// toks[i], or -1.
func closing(toks []ntok, i int) int {
	depth := 0
	for j := i; j < len(toks); j++ {
		switch toks[j].kind {
		case nOpen:
			depth++
		case nClose:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// foldLists folds the parenthesised or bracketed lists of parameters that
// are not a function's arguments to one parameter ("IN (?, ?, ?)" → "IN
// (?)", "ARRAY[?, ?]" → "ARRAY[?]"), and a list of equal groups (the rows
// of VALUES, tuples) to one group.
func foldLists(toks []ntok) []ntok {
	out := make([]ntok, 0, len(toks))
	for i := 0; i < len(toks); {
		if toks[i].kind != nOpen {
			out = append(out, toks[i])
			i++
			continue
		}
		group, end := foldGroup(toks, i, out)
		if group == nil {
			out = append(out, toks[i:]...) // unbalanced: keep the rest as it is
			break
		}
		listStart := len(out) == 0 || out[len(out)-1].kind == nOpen ||
			(out[len(out)-1].kind == nWord && strings.EqualFold(out[len(out)-1].text, "values"))
		out = append(out, group...)
		i = end + 1
		for listStart && i+1 < len(toks) && toks[i].kind == nComma && toks[i+1].kind == nOpen {
			next, nend := foldGroup(toks, i+1, out[:len(out)-len(group)])
			if next == nil || !slices.Equal(next, group) {
				break
			}
			i = nend + 1
		}
	}
	return out
}

// foldGroup folds the group opened at toks[i], which follows before; it
// returns the folded group and the index of its closing token, or nil when
// the group is not closed.
func foldGroup(toks []ntok, i int, before []ntok) ([]ntok, int) {
	end := closing(toks, i)
	if end < 0 {
		return nil, -1
	}
	inner := foldLists(toks[i+1 : end])
	if !(toks[i].text == "(" && isCall(before)) && onlyParams(inner) {
		inner = []ntok{paramTok}
	}
	group := make([]ntok, 0, len(inner)+2)
	group = append(group, toks[i])
	group = append(group, inner...)
	return append(group, toks[end]), end
}

// onlyParams reports whether toks is "?" or "?, ?, …".
func onlyParams(toks []ntok) bool {
	if len(toks)%2 == 0 {
		return false
	}
	for i, t := range toks {
		if (i%2 == 0 && t.kind != nParam) || (i%2 == 1 && t.kind != nComma) {
			return false
		}
	}
	return true
}

// spacedKeywords are the words whose parenthesis is not a function call's:
// it opens a list, a subquery or an expression.
var spacedKeywords = map[string]bool{
	"all": true, "and": true, "as": true, "between": true, "by": true, "case": true, "check": true,
	"conflict": true, "distinct": true, "else": true, "except": true, "exists": true, "filter": true,
	"from": true, "group": true, "having": true, "ilike": true, "in": true, "intersect": true, "is": true,
	"join": true, "key": true, "lateral": true, "like": true, "limit": true, "materialized": true,
	"not": true, "offset": true, "on": true, "or": true, "over": true, "recursive": true, "returning": true,
	"select": true, "set": true, "then": true, "union": true, "unique": true, "using": true,
	"values": true, "when": true, "where": true, "with": true,
}

// relationKeywords are the words after which a name is a table's, and its
// parenthesis a column list: INSERT INTO t (a, b).
var relationKeywords = map[string]bool{
	"into": true, "table": true, "references": true, "with": true, "recursive": true,
}

func isKeyword(set map[string]bool, t ntok) bool {
	return t.kind == nWord && len(t.text) <= 12 && set[strings.ToLower(t.text)]
}

// isCall reports whether a "(" after before opens a function call's
// arguments: it follows a name that is no keyword of spacedKeywords and no
// table name (ALL and ANY after an operator are calls: "= ALL(?)").
func isCall(before []ntok) bool {
	n := len(before)
	if n == 0 || before[n-1].kind != nWord {
		return false
	}
	name := before[n-1]
	if isKeyword(spacedKeywords, name) {
		return strings.EqualFold(name.text, "all") && n >= 2 && before[n-2].kind == nOp
	}
	// The start of a qualified name: schema.table.
	j := n - 1
	for j >= 2 && before[j-1].kind == nDot && before[j-2].kind == nWord {
		j -= 2
	}
	return j == 0 || !isKeyword(relationKeywords, before[j-1])
}

// isUnary reports whether the operator toks[i] is a sign: a - + or ~ after
// an operator, an opening bracket, a comma, the start or a keyword after
// which an operand begins.
func isUnary(toks []ntok, i int) bool {
	if t := toks[i].text; t != "-" && t != "+" && t != "~" {
		return false
	}
	if i == 0 {
		return true
	}
	switch p := toks[i-1]; p.kind {
	case nOp, nOpen, nComma, nCast:
		return true
	case nWord:
		return isOperandKeyword([]byte(p.text))
	}
	return false
}

// render lays tokens out as normalize describes.
func render(toks []ntok) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 && spaceBefore(toks, i) {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}

// spaceBefore reports whether a space separates toks[i-1] and toks[i].
func spaceBefore(toks []ntok, i int) bool {
	p, t := toks[i-1], toks[i]
	switch {
	case (p.kind == nColon && (t.kind == nColon || t.kind == nCast || t.kind == nOp)) ||
		(t.kind == nColon && (p.kind == nCast || p.kind == nOp)):
		return true // glued, they would read as a cast or an operator
	case t.kind == nClose, t.kind == nComma, t.kind == nDot, t.kind == nCast, t.kind == nColon,
		t.kind == nOther && t.text == ";":
		return false
	case p.kind == nOpen, p.kind == nDot, p.kind == nCast, p.kind == nColon:
		return false
	case t.kind == nOpen && t.text == "[":
		return false
	case t.kind == nOpen:
		return !isCall(toks[:i])
	case p.kind == nOp && t.kind != nOp && t.kind != nParam && isUnary(toks, i-1):
		return false
	}
	return true
}
