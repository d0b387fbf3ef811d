package respdiff

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// segKind is the kind of a step of a JSON path.
type segKind uint8

const (
	segKey      segKind = iota // .name or ["name"]
	segIndex                   // [N]
	segAnyIndex                // [*]
	segAnyKey                  // .*
)

// seg is one step of a JSON path.
type seg struct {
	kind  segKind
	key   string
	index int
}

// rulePath is a parsed rule path.
type rulePath struct {
	text   string
	kind   string // "status", "header", "body", "line" or "json"
	header string // canonical header name (kind "header")
	line   int    // kind "line"
	segs   []seg  // kind "json"
}

// CheckPath returns a one-line error when s is not a path a rule may
// name (see the paths above), nil when it is.
func CheckPath(s string) error {
	_, err := parseRulePath(s)
	return err
}

// parseRulePath parses a path as a rule names it.
func parseRulePath(s string) (rulePath, error) {
	p := rulePath{text: s}
	switch {
	case s == "status" || s == "body":
		p.kind = s
	case strings.HasPrefix(s, "header:"):
		name := strings.TrimSpace(strings.TrimPrefix(s, "header:"))
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return p, fmt.Errorf("path %q: want header:NAME, e.g. header:Content-Type", s)
		}
		p.kind, p.header = "header", http.CanonicalHeaderKey(name)
	case strings.HasPrefix(s, "line:"):
		n, err := strconv.Atoi(strings.TrimPrefix(s, "line:"))
		if err != nil || n < 1 {
			return p, fmt.Errorf("path %q: want line:N with N from 1", s)
		}
		p.kind, p.line = "line", n
	default:
		segs, err := parseJSONPath(s)
		if err != nil {
			return p, err
		}
		p.kind, p.segs = "json", segs
	}
	return p, nil
}

// parseJSONPath parses a JSON path ($, .key, ["key"], [N], [*], .*),
// returning a one-line error naming the path and what is wrong.
func parseJSONPath(s string) ([]seg, error) {
	bad := func(why string) error { return fmt.Errorf("path %q: %s", s, why) }
	if !strings.HasPrefix(s, "$") {
		return nil, bad(`want a JSON path starting with $ (e.g. $.items[*].id), or status, body, header:NAME, line:N`)
	}
	var segs []seg
	for rest := s[1:]; rest != ""; {
		switch rest[0] {
		case '.':
			end := 1
			for end < len(rest) && rest[end] != '.' && rest[end] != '[' {
				end++
			}
			key := rest[1:end]
			switch {
			case key == "":
				return nil, bad("empty key after '.'")
			case key == "*":
				segs = append(segs, seg{kind: segAnyKey})
			default:
				segs = append(segs, seg{kind: segKey, key: key})
			}
			rest = rest[end:]
		case '[':
			sg, n, err := parseBracket(rest)
			if err != nil {
				return nil, bad(err.Error())
			}
			segs = append(segs, sg)
			rest = rest[n:]
		default:
			return nil, bad(fmt.Sprintf("unexpected %q: want .key, [N], [*] or [\"key\"]", rest[0]))
		}
	}
	return segs, nil
}

// parseBracket parses the [...] at the start of s, returning its length.
func parseBracket(s string) (seg, int, error) {
	if strings.HasPrefix(s, `["`) {
		// A quoted key: find the closing quote, skipping escapes.
		for i := 2; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				if i+1 >= len(s) || s[i+1] != ']' {
					return seg{}, 0, errors.New(`quoted key not closed by "]`)
				}
				key, err := strconv.Unquote(s[1 : i+1])
				if err != nil {
					return seg{}, 0, fmt.Errorf("quoted key %s: %w", s[1:i+1], err)
				}
				return seg{kind: segKey, key: key}, i + 2, nil
			}
		}
		return seg{}, 0, errors.New("quoted key not closed")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return seg{}, 0, errors.New("'[' not closed")
	}
	in := s[1:end]
	if in == "*" {
		return seg{kind: segAnyIndex}, end + 1, nil
	}
	n, err := strconv.Atoi(in)
	if err != nil || n < 0 || strings.HasPrefix(in, "+") {
		b := "[" + in + "]"
		if q := strconv.Quote(b); q[1:len(q)-1] != b {
			b = q // a control character or other byte that would break the line
		}
		return seg{}, 0, fmt.Errorf("%s: want an index from 0, * or a quoted key", b)
	}
	return seg{kind: segIndex, index: n}, end + 1, nil
}

// formatPath writes segs as a path; with general, indices as [*].
func formatPath(segs []seg, general bool) string {
	var b strings.Builder
	b.WriteByte('$')
	for _, s := range segs {
		switch s.kind {
		case segKey:
			if plainKey(s.key) {
				b.WriteByte('.')
				b.WriteString(s.key)
			} else {
				b.WriteString("[")
				b.WriteString(strconv.Quote(s.key))
				b.WriteString("]")
			}
		case segIndex:
			if general {
				b.WriteString("[*]")
			} else {
				b.WriteString("[" + strconv.Itoa(s.index) + "]")
			}
		case segAnyIndex:
			b.WriteString("[*]")
		case segAnyKey:
			b.WriteString(".*")
		}
	}
	return b.String()
}

// plainKey reports whether key can follow a '.' in a path.
func plainKey(key string) bool {
	if key == "" || key == "*" {
		return false
	}
	for _, r := range key {
		ok := r == '_' || r == '-' || r == '@' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r > 0x7f && r != 0xfffd
		if !ok {
			return false
		}
	}
	return true
}

// Generalize turns a concrete JSON path into the one differences are
// grouped by, every index as [*]: $.items[3].id → $.items[*].id. Other
// paths (status, header:NAME, body, line:N) and paths it cannot parse come
// back as they are.
func Generalize(path string) string {
	segs, err := parseJSONPath(path)
	if err != nil {
		return path
	}
	return formatPath(segs, true)
}

// matchSegs reports whether the rule segments r match the start of the
// concrete segments c (a rule names a value and everything inside it).
func matchSegs(r, c []seg) bool {
	if len(r) > len(c) {
		return false
	}
	for i, s := range r {
		x := c[i]
		switch s.kind {
		case segKey:
			if x.kind != segKey || x.key != s.key {
				return false
			}
		case segIndex:
			if x.kind != segIndex || x.index != s.index {
				return false
			}
		case segAnyIndex:
			if x.kind != segIndex && x.kind != segAnyIndex {
				return false
			}
		case segAnyKey:
			if x.kind != segKey && x.kind != segAnyKey {
				return false
			}
		}
	}
	return true
}
