package snapshots

import "strings"

// A GraphQL document is read only as far as naming its operation needs:
// the operations and fragments at the top level, and the first field of a
// selection set. Arguments, variables, directives and everything nested is
// skipped by matching brackets. Anything that is not an executable
// document (a search string sent as "query", a schema) is no GraphQL.

// gqlToken is a lexical token: a name, a punctuator ("{", "...", …), or a
// value (string or number) whose text does not matter.
type gqlToken struct {
	kind byte // 'n' name, 'p' punctuator, 'v' value
	text string
}

// gqlDoc is what parseGraphQL keeps of a document.
type gqlDoc struct {
	toks  []gqlToken
	ops   []gqlOp
	frags map[string]int // fragment name → index of its selection set's "{"
}

// gqlOp is an operation definition.
type gqlOp struct {
	typ  string // "query", "mutation" or "subscription"
	name string // "" when anonymous
	sel  int    // index of its selection set's "{"
}

// maxFragmentDepth bounds following fragment spreads to a first field, so a
// cycle (invalid, but a client may send it) ends.
const maxFragmentDepth = 8

// parseGraphQL parses the top level of a document; ok is false unless it is
// an executable document with at least one operation.
func parseGraphQL(src string) (*gqlDoc, bool) {
	toks, ok := lexGraphQL(src)
	if !ok {
		return nil, false
	}
	d := &gqlDoc{toks: toks, frags: map[string]int{}}
	for i := 0; i < len(toks); {
		t := toks[i]
		switch {
		case t.is('p', "{"):
			d.ops = append(d.ops, gqlOp{typ: "query", sel: i})
		case t.kind == 'n' && (t.text == "query" || t.text == "mutation" || t.text == "subscription"):
			op := gqlOp{typ: t.text}
			i++
			if i < len(toks) && toks[i].kind == 'n' {
				op.name = toks[i].text
				i++
			}
			if i, ok = d.skipToSelection(i); !ok {
				return nil, false
			}
			op.sel = i
			d.ops = append(d.ops, op)
		case t.is('n', "fragment"):
			if i+3 >= len(toks) || toks[i+1].kind != 'n' || !toks[i+2].is('n', "on") || toks[i+3].kind != 'n' {
				return nil, false
			}
			name := toks[i+1].text
			if i, ok = d.skipToSelection(i + 4); !ok {
				return nil, false
			}
			d.frags[name] = i
		default:
			return nil, false
		}
		if i, ok = d.skipGroup(i); !ok {
			return nil, false
		}
	}
	return d, len(d.ops) > 0
}

func (t gqlToken) is(kind byte, text string) bool { return t.kind == kind && t.text == text }

// skipToSelection skips variable definitions and directives from i to the
// "{" of a selection set and returns its index.
func (d *gqlDoc) skipToSelection(i int) (int, bool) {
	for i < len(d.toks) {
		t := d.toks[i]
		switch {
		case t.is('p', "{"):
			return i, true
		case t.is('p', "("):
			var ok bool
			if i, ok = d.skipGroup(i); !ok {
				return 0, false
			}
		case t.is('p', "@"):
			if i+1 >= len(d.toks) || d.toks[i+1].kind != 'n' {
				return 0, false
			}
			i += 2
		default:
			return 0, false
		}
	}
	return 0, false
}

// skipGroup returns the index after the bracket that closes the one at i.
func (d *gqlDoc) skipGroup(i int) (int, bool) {
	depth := 0
	for ; i < len(d.toks); i++ {
		t := d.toks[i]
		if t.kind != 'p' {
			continue
		}
		switch t.text {
		case "{", "(", "[":
			depth++
		case "}", ")", "]":
			depth--
			if depth == 0 {
				return i + 1, true
			}
			if depth < 0 {
				return 0, false
			}
		}
	}
	return 0, false
}

// firstField returns the name of the first field selected by the selection
// set at sel, looking through fragments.
func (d *gqlDoc) firstField(sel, depth int) (string, bool) {
	i := sel + 1
	if depth > maxFragmentDepth || i >= len(d.toks) {
		return "", false
	}
	t := d.toks[i]
	switch {
	case t.kind == 'n':
		if i+2 < len(d.toks) && d.toks[i+1].is('p', ":") && d.toks[i+2].kind == 'n' {
			return d.toks[i+2].text, true // alias: field
		}
		return t.text, true
	case t.is('p', "..."):
		i++
		if i >= len(d.toks) {
			return "", false
		}
		if n := d.toks[i]; n.kind == 'n' && n.text != "on" {
			at, ok := d.frags[n.text]
			if !ok {
				return "", false
			}
			return d.firstField(at, depth+1)
		}
		if d.toks[i].is('n', "on") {
			i += 2 // on Type
		}
		at, ok := d.skipToSelection(i)
		if !ok {
			return "", false
		}
		return d.firstField(at, depth+1)
	}
	return "", false
}

// lexGraphQL splits src into tokens, dropping white space, commas and
// comments; ok is false at a character GraphQL does not have.
func lexGraphQL(src string) (toks []gqlToken, ok bool) {
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',':
			i++
		case strings.HasPrefix(src[i:], "\ufeff"):
			i += len("\ufeff")
		case c == '#':
			for i < len(src) && src[i] != '\n' && src[i] != '\r' {
				i++
			}
		case c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z':
			j := i + 1
			for j < len(src) && isNameByte(src[j]) {
				j++
			}
			toks, i = append(toks, gqlToken{'n', src[i:j]}), j
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(src) && (isNameByte(src[j]) || src[j] == '.' || src[j] == '+' || src[j] == '-') {
				j++
			}
			toks, i = append(toks, gqlToken{'v', ""}), j
		case strings.HasPrefix(src[i:], `"""`):
			j := i + 3
			for j < len(src) && !strings.HasPrefix(src[j:], `"""`) {
				if strings.HasPrefix(src[j:], `\"""`) {
					j += 4
					continue
				}
				j++
			}
			if j >= len(src) {
				return nil, false
			}
			toks, i = append(toks, gqlToken{'v', ""}), j+3
		case c == '"':
			j := i + 1
			for j < len(src) && src[j] != '"' && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(src) || src[j] != '"' {
				return nil, false
			}
			toks, i = append(toks, gqlToken{'v', ""}), j+1
		case strings.HasPrefix(src[i:], "..."):
			toks, i = append(toks, gqlToken{'p', "..."}), i+3
		case strings.IndexByte("!$&():=@[]{}|", c) >= 0:
			toks, i = append(toks, gqlToken{'p', src[i : i+1]}), i+1
		default:
			return nil, false
		}
	}
	return toks, true
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// isGraphQLName reports whether s is a GraphQL name, /[_A-Za-z][_0-9A-Za-z]*/,
// of at most maxOperation bytes.
func isGraphQLName(s string) bool {
	if s == "" || len(s) > maxOperation || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}
