package respdiff

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Value describes one side of a difference: a type and, for scalars, the
// value as JSON writes it.
type Value struct {
	// Type is number, string, bool, null, object, array, absent; status
	// for a status code, header for a header's values, line for a line of
	// text, bytes for a body compared whole.
	Type string `json:"type"`
	// Text is the value: 7, "7" (quoted), true, the status code, the
	// header's values quoted, the line quoted; for object and array, how
	// many keys or items; for bytes, the size and hash. "" for null and
	// absent.
	Text string `json:"value,omitempty"`
}

// Absent is the Value of what one side lacks.
var Absent = Value{Type: "absent"}

// String is the description reports print: number 7, string "7", absent,
// object (3 keys), array (2 items), null.
func (v Value) String() string {
	switch v.Type {
	case "absent", "null":
		return v.Type
	case "object", "array":
		return v.Type + " (" + v.Text + ")"
	case "status", "header", "line", "bytes":
		return v.Text
	}
	return v.Type + " " + v.Text
}

// absent stands for a key or item one side lacks.
type absent struct{}

// maxValueText bounds the text of a string value kept in a description.
const maxValueText = 80

// describe is the Value of a decoded JSON value.
func describe(v any) Value {
	switch x := v.(type) {
	case absent:
		return Absent
	case nil:
		return Value{Type: "null"}
	case bool:
		return Value{Type: "bool", Text: strconv.FormatBool(x)}
	case json.Number:
		return Value{Type: "number", Text: clip(string(x))}
	case string:
		return Value{Type: "string", Text: quote(x)}
	case map[string]any:
		return Value{Type: "object", Text: plural(len(x), "key")}
	case []any:
		return Value{Type: "array", Text: plural(len(x), "item")}
	}
	return Value{Type: "unknown"}
}

// quote quotes s, cut to maxValueText runes.
func quote(s string) string { return strconv.Quote(clip(s)) }

// clip cuts s to maxValueText runes, marking the cut with "…".
func clip(s string) string {
	if utf8.RuneCountInString(s) <= maxValueText {
		return s
	}
	r := []rune(s)
	return string(r[:maxValueText]) + "…"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// decodeJSON decodes one JSON value (numbers as json.Number) and nothing
// after it but space.
func decodeJSON(body []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// looksJSON reports whether a body should be compared as JSON: its
// Content-Type says json, or it starts with { or [.
func looksJSON(contentType string, body []byte) bool {
	if strings.Contains(strings.ToLower(contentType), "json") {
		return true
	}
	t := bytes.TrimLeft(body, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// Leaf is one value of a flattened JSON document.
type Leaf struct {
	// Path is the value's concrete path, e.g. $.items[3].id.
	Path string
	// Value is its type and value; empty objects and arrays are leaves
	// too (Type object or array).
	Value Value
}

// Flatten decodes a JSON document into its leaves, in order of path
// (object keys sorted), or returns the decoding error.
func Flatten(body []byte) ([]Leaf, error) {
	v, err := decodeJSON(body)
	if err != nil {
		return nil, err
	}
	var out []Leaf
	var segs []seg
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) > 0 {
				for _, k := range slices.Sorted(maps.Keys(x)) {
					segs = append(segs, seg{kind: segKey, key: k})
					walk(x[k])
					segs = segs[:len(segs)-1]
				}
				return
			}
		case []any:
			if len(x) > 0 {
				for i, e := range x {
					segs = append(segs, seg{kind: segIndex, index: i})
					walk(e)
					segs = segs[:len(segs)-1]
				}
				return
			}
		}
		out = append(out, Leaf{Path: formatPath(segs, false), Value: describe(v)})
	}
	walk(v)
	return out, nil
}

// canon is the canonical JSON text of a decoded value (keys sorted), for
// comparing array items as a multiset.
func canon(v any) string { return string(appendCanon(nil, v)) }

func appendCanon(b []byte, v any) []byte {
	switch x := v.(type) {
	case map[string]any:
		b = append(b, '{')
		for i, k := range slices.Sorted(maps.Keys(x)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, k)
			b = append(b, ':')
			b = appendCanon(b, x[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanon(b, e)
		}
		return append(b, ']')
	case string:
		return strconv.AppendQuote(b, x)
	case json.Number:
		return append(b, x...)
	case bool:
		return strconv.AppendBool(b, x)
	}
	return append(b, "null"...)
}

// deepEqual reports whether two decoded JSON values are equal, numbers by
// value.
func deepEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !deepEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, deepEqual)
	}
	return sameScalar(a, b)
}

// sameScalar reports whether two decoded JSON scalars are equal; numbers
// compare by value (1 and 1.0 are equal).
func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		fx, ex := x.Float64()
		fy, ey := y.Float64()
		return ex == nil && ey == nil && fx == fy
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case absent:
		_, ok := b.(absent)
		return ok
	}
	return false
}
