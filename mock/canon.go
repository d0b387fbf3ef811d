package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// masked replaces a volatile value at the loose level.
const masked = "\x00*"

// bodyKind says how a body is compared.
type bodyKind int

const (
	bodyRaw  bodyKind = iota // bytes as they are
	bodyJSON                 // one JSON value, compared canonically
	bodyForm                 // application/x-www-form-urlencoded, compared as a query
)

// body is a request body decoded for matching.
type body struct {
	kind bodyKind
	raw  []byte
	json any        // bodyJSON: decoded with json.Number
	form url.Values // bodyForm
}

// parseBody decodes b for matching: a JSON value when it is one (whatever the
// content type says), a form when the content type says so, else raw bytes.
func parseBody(contentType string, b []byte) body {
	if len(bytes.TrimSpace(b)) == 0 {
		return body{kind: bodyRaw}
	}
	if v, ok := decodeJSON(b); ok {
		return body{kind: bodyJSON, raw: b, json: v}
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil && mt == "application/x-www-form-urlencoded" {
		if f, err := url.ParseQuery(string(b)); err == nil {
			return body{kind: bodyForm, raw: b, form: f}
		}
	}
	return body{kind: bodyRaw, raw: b}
}

// decodeJSON decodes b when it holds exactly one JSON value.
func decodeJSON(b []byte) (any, bool) {
	switch c := firstNonSpace(b); {
	case c == '{' || c == '[' || c == '"' || c == '-' || ('0' <= c && c <= '9') || c == 't' || c == 'f' || c == 'n':
	default:
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return c
	}
	return 0
}

// exact returns the body as compared at the exact level: canonical JSON (keys
// sorted, no insignificant whitespace) for JSON, the bytes otherwise.
func (b body) exact() string {
	if b.kind == bodyJSON {
		return canonicalJSON(b.json)
	}
	return string(b.raw)
}

// loose returns the body as compared at the loose level: canonical JSON or
// sorted form pairs with volatile values masked, the bytes otherwise.
func (b body) loose(v volatility) string {
	switch b.kind {
	case bodyJSON:
		return canonicalJSON(maskJSON(b.json, "", v))
	case bodyForm:
		return looseQuery(b.form, v)
	}
	return string(b.raw)
}

// canonicalJSON renders a decoded JSON value canonically: object keys
// sorted, no insignificant whitespace, numbers as their literal text,
// strings quoted as by strconv.Quote. Equal values give equal text and
// different values different text; it is meant for comparing and showing,
// and is close to, but not always, valid JSON.
func canonicalJSON(v any) string {
	var b strings.Builder
	writeCanonical(&b, v)
	return b.String()
}

func writeCanonical(b *strings.Builder, v any) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, t[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case string:
		b.WriteString(strconv.Quote(t))
	case json.Number:
		b.WriteString(string(t))
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case nil:
		b.WriteString("null")
	default: // not produced by the decoder
		fmt.Fprintf(b, "%#v", t)
	}
}

// maskJSON returns a copy of v with volatile values replaced by masked: the
// values of volatile keys, and strings and numbers that look volatile.
func maskJSON(v any, key string, vol volatility) any {
	if key != "" && vol.key(key) {
		return masked
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = maskJSON(e, k, vol)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = maskJSON(e, "", vol)
		}
		return out
	case string:
		if volatileValue(t) {
			return masked
		}
	case json.Number:
		if volatileValue(string(t)) {
			return masked
		}
	}
	return v
}

// looseQuery renders q with pairs sorted and volatile values masked.
func looseQuery(q url.Values, vol volatility) string {
	pairs := make([]string, 0, len(q))
	for k, vs := range q {
		for _, v := range vs {
			if vol.key(k) || volatileValue(v) {
				v = masked
			}
			pairs = append(pairs, url.QueryEscape(k)+"="+url.QueryEscape(v))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// parseQuery parses a raw query leniently: malformed pairs are kept as they
// are rather than dropped, so that they still take part in matching.
func parseQuery(raw string) url.Values {
	q := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		q[k] = append(q[k], v)
	}
	return q
}
