package replayer

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// idLike reports whether v looks like a value a server generates: an id,
// a UUID, a token. Short words and small numbers ("active", "2") are not:
// linking on them would order requests that are not related.
func idLike(v string) bool {
	if len(v) < 4 || len(v) > 512 || strings.Contains(v, Redacted) || strings.ContainsAny(v, " \t\r\n\"") {
		return false
	}
	if len(v) >= 16 {
		return true
	}
	return strings.ContainsAny(v, "0123456789")
}

// requestValues calls f with every id-like value of e's request and where
// it sits, and with every cookie sent (redacted ones as the whole header).
func requestValues(e *snapshots.Exchange, f func(v string, at loc)) {
	if u, err := url.Parse(e.URL); err == nil {
		for _, seg := range strings.Split(u.Path, "/") {
			if idLike(seg) {
				f(seg, loc{kind: locPath})
			}
		}
		for k, vs := range u.Query() {
			for _, v := range vs {
				if idLike(v) {
					f(v, loc{locQuery, k})
				}
			}
		}
	}
	for k, vs := range e.RequestHeader {
		ck := http.CanonicalHeaderKey(k)
		for _, v := range vs {
			switch {
			case ck == "Cookie" && (v == Redacted || strings.HasSuffix(v, " "+Redacted)):
				f("", loc{locCookie, ""})
			case ck == "Cookie":
				for _, c := range parseCookies(v) {
					f(c[1], loc{locCookie, c[0]})
				}
			case ck == "Traceparent" || ck == "Tracestate" || ck == "Host" || ck == "Content-Length":
			case idLike(v):
				f(v, loc{locHeader, ck})
			}
		}
	}
	if len(e.RequestBody) > 0 && json.Valid(e.RequestBody) {
		jsonValues(e.RequestBody, func(v, path string) { f(v, loc{locBody, path}) })
	}
}

// answerValues calls f with every id-like value of e's answer and where it
// sits, and with every cookie it set.
func answerValues(e *snapshots.Exchange, f func(v string, at loc)) {
	if e.Status < 200 || e.Status >= 400 {
		return
	}
	for _, v := range e.ResponseHeader.Values("Set-Cookie") {
		name := ""
		if v != Redacted {
			name, _, _ = strings.Cut(v, "=")
		}
		f("", loc{locSetCookie, strings.TrimSpace(name)})
	}
	body := e.ResponseBody
	if enc := e.ResponseHeader.Get("Content-Encoding"); enc != "" {
		if b, _, ok := decode(strings.ToLower(enc), body, 1<<20); ok {
			body = b
		}
	}
	if len(body) > 0 && json.Valid(body) {
		jsonValues(body, func(v, path string) { f(v, loc{locJSON, path}) })
	}
	if l := e.ResponseHeader.Get("Location"); l != "" {
		if u, err := url.Parse(l); err == nil {
			for i, seg := range strings.Split(u.Path, "/") {
				if idLike(seg) {
					f(seg, loc{locLocation, strconv.Itoa(i)})
				}
			}
		}
	}
}

// parseCookies splits a Cookie header into name/value pairs.
func parseCookies(h string) [][2]string {
	var out [][2]string
	for _, part := range strings.Split(h, ";") {
		name, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && name != "" {
			out = append(out, [2]string{name, v})
		}
	}
	return out
}

// jsonValues calls f with every id-like string and integer of a JSON
// document and its path ($.id, $.items[0].id).
func jsonValues(doc []byte, f func(v, path string)) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return
	}
	walkJSON(v, "$", 0, f)
}

func walkJSON(v any, path string, depth int, f func(v, path string)) {
	if depth > 16 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			walkJSON(c, path+"."+k, depth+1, f)
		}
	case []any:
		for i, c := range x {
			if i >= 100 {
				return
			}
			walkJSON(c, path+"["+strconv.Itoa(i)+"]", depth+1, f)
		}
	case string:
		if idLike(x) {
			f(x, path)
		}
	case json.Number:
		if _, err := x.Int64(); err == nil && idLike(x.String()) {
			f(x.String(), path)
		}
	}
}

// jsonAt returns the scalar at path ($.a.b[2].c) of a decoded document.
func jsonAt(v any, path string) (string, bool) {
	var out string
	found := false
	jsonWalk(v, path, false, func(x string) bool { out, found = x, true; return false })
	return out, found
}

// jsonAnyOf calls f with every value at path with each array index taken
// as any index ("$.items[0].sku" reads every item's sku), until f returns
// false.
func jsonAnyOf(v any, path string, f func(string) bool) {
	jsonWalk(v, path, true, f)
}

// jsonWalk walks path through v, every element of an array when anyIndex,
// and calls f with each string or number it reaches until f returns false;
// it reports whether to go on.
func jsonWalk(v any, path string, anyIndex bool, f func(string) bool) bool {
	rest := strings.TrimPrefix(path, "$")
	for rest != "" {
		switch rest[0] {
		case '.':
			end := strings.IndexAny(rest[1:], ".[")
			if end < 0 {
				end = len(rest) - 1
			}
			m, ok := v.(map[string]any)
			if !ok {
				return true
			}
			v, rest = m[rest[1:1+end]], rest[1+end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			i, err := strconv.Atoi(rest[1:max(end, 1)])
			a, ok := v.([]any)
			if end < 0 || err != nil || !ok {
				return true
			}
			if anyIndex {
				for _, e := range a {
					if !jsonWalk(e, "$"+rest[end+1:], true, f) {
						return false
					}
				}
				return true
			}
			if i >= len(a) {
				return true
			}
			v, rest = a[i], rest[end+1:]
		default:
			return true
		}
	}
	switch x := v.(type) {
	case string:
		return f(x)
	case json.Number:
		return f(x.String())
	}
	return true
}
