package mock

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// MissError explains a request the mock could not answer: the closest
// recorded request of the same service and the fields that differ from it.
type MissError struct {
	// Request is the request that missed, e.g. "GET https://api.test/a?x=2".
	Request string `json:"request"`
	// Closest is the most similar recorded request of the same service; ""
	// when nothing is recorded for it.
	Closest string `json:"closest"`
	// Differences name the fields of Request that differ from Closest, e.g.
	// "query x: got 2, recorded 1".
	Differences []string `json:"differences"`
	// Count is how many times this request missed (in MissLog; 1 otherwise).
	Count int64 `json:"count,omitempty"`
}

// Error returns a one-line explanation.
func (e *MissError) Error() string {
	if e.Closest == "" {
		return "mock miss: " + e.Request + ": nothing recorded for this service"
	}
	return "mock miss: " + e.Request + ": closest recorded " + e.Closest + ": " + strings.Join(e.Differences, "; ")
}

// maxDifferences bounds the differences listed for one miss.
const maxDifferences = 12

// explain builds the MissError of q against its closest recorded request.
func (m *matcher) explain(q *request) *MissError {
	me := &MissError{Request: q.String(), Count: 1, Differences: []string{}}
	c := m.closest(q)
	if c == nil {
		return me
	}
	me.Closest = c.req.String()
	d := differences(q, &c.req)
	if len(d) > maxDifferences {
		d = append(d[:maxDifferences-1], fmt.Sprintf("and %d more differences", len(d)-maxDifferences+1))
	}
	me.Differences = d
	return me
}

// similarity scores how alike a request and a recorded one are: method
// first, then path (equal, same template, or shared leading segments), then
// query parameters and body. Higher is closer. Both must be prepared.
func similarity(q, r *request, vol volatility) int {
	s := 0
	if q.service == r.service {
		s += 64
	}
	if q.method == r.method {
		s += 32
	}
	switch {
	case q.path == r.path:
		s += 16
	default:
		s += min(sharedSegments(q.path, r.path), 8)
	}
	for k, vs := range q.query {
		rv, ok := r.query[k]
		switch {
		case !ok:
			s--
		case slices.Equal(vs, rv):
			s += 2
		case vol.key(k):
			s++ // differs only in a volatile value
		}
	}
	for k := range r.query {
		if _, ok := q.query[k]; !ok {
			s--
		}
	}
	switch {
	case q.exactBody == r.exactBody:
		s += 8
	case q.looseBody == r.looseBody:
		s += 6
	case q.flat != nil && r.flat != nil:
		same := 0
		for p, v := range q.flat {
			if w, ok := r.flat[p]; ok && w == v {
				same++
			}
		}
		s += 6 * same / max(len(q.flat), len(r.flat), 1)
	}
	return s
}

// sharedSegments counts the leading path segments a and b have in common.
func sharedSegments(a, b string) int {
	a, b = strings.Trim(a, "/"), strings.Trim(b, "/")
	n := 0
	for a != "" && b != "" {
		sa, ra, _ := strings.Cut(a, "/")
		sb, rb, _ := strings.Cut(b, "/")
		if sa != sb {
			break
		}
		n++
		a, b = ra, rb
	}
	return n
}

// differences names the fields of q that differ from the recorded r; both
// must be prepared.
func differences(q, r *request) []string {
	var d []string
	if q.service != r.service {
		d = append(d, diff("service", q.service, r.service))
	}
	if q.method != r.method {
		d = append(d, diff("method", q.method, r.method))
	}
	if q.path != r.path {
		d = append(d, diff("path", q.path, r.path))
	}
	d = append(d, valuesDiff("query ", q.query, r.query)...)
	if len(d) == 0 && q.rawQuery != r.rawQuery {
		d = append(d, diff("query", q.rawQuery, r.rawQuery))
	}
	if q.exactBody != r.exactBody {
		d = append(d, bodyDiff(q, r)...)
	}
	return d
}

func diff(field, got, recorded string) string {
	return field + ": got " + show(got) + ", recorded " + show(recorded)
}

// unionKeys returns the keys of a and b, sorted, each once.
func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// valuesDiff compares query or form values key by key.
func valuesDiff(prefix string, got, rec url.Values) []string {
	var d []string
	for _, k := range unionKeys(got, rec) {
		g, gok := got[k]
		r, rok := rec[k]
		switch {
		case !rok:
			d = append(d, prefix+k+": got "+show(strings.Join(g, ","))+", not recorded")
		case !gok:
			d = append(d, prefix+k+": missing, recorded "+show(strings.Join(r, ",")))
		case !slices.Equal(g, r):
			d = append(d, diff(prefix+k, strings.Join(g, ","), strings.Join(r, ",")))
		}
	}
	return d
}

func bodyDiff(q, r *request) []string {
	got, rec := q.body, r.body
	switch {
	case q.flat != nil && r.flat != nil:
		a, b := q.flat, r.flat
		var d []string
		for _, p := range unionKeys(a, b) {
			g, gok := a[p]
			r, rok := b[p]
			switch {
			case !rok:
				d = append(d, "body "+p+": got "+show(g)+", not recorded")
			case !gok:
				d = append(d, "body "+p+": missing, recorded "+show(r))
			case g != r:
				d = append(d, diff("body "+p, g, r))
			}
		}
		if len(d) > 0 {
			return d
		}
	case got.kind == bodyForm && rec.kind == bodyForm:
		if d := valuesDiff("form ", got.form, rec.form); len(d) > 0 {
			return d
		}
	}
	s := fmt.Sprintf("body: got %d bytes, recorded %d bytes", len(got.raw), len(rec.raw))
	if got.kind != rec.kind {
		s += fmt.Sprintf(" (got %s, recorded %s)", got.kind, rec.kind)
	} else if i := firstDiff(got.raw, rec.raw); i >= 0 {
		s += fmt.Sprintf(", first difference at byte %d", i)
	}
	return []string{s}
}

func (k bodyKind) String() string {
	switch k {
	case bodyJSON:
		return "JSON"
	case bodyForm:
		return "a form"
	}
	return "raw bytes"
}

func firstDiff(a, b []byte) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// flattenJSON maps each leaf of v to its canonical text, keyed by a path
// such as "$.items[0].id". Empty objects and arrays are leaves.
func flattenJSON(v any) map[string]string {
	out := map[string]string{}
	var walk func(p string, v any)
	walk = func(p string, v any) {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				out[p] = "{}"
			}
			for k, e := range t {
				walk(p+jsonKey(k), e)
			}
		case []any:
			if len(t) == 0 {
				out[p] = "[]"
			}
			for i, e := range t {
				walk(p+"["+strconv.Itoa(i)+"]", e)
			}
		case json.Number:
			out[p] = string(t)
		default: // strings quoted, so that "1" and 1 differ
			out[p] = canonicalJSON(t)
		}
	}
	walk("$", v)
	return out
}

// jsonKey renders an object key in a path: ".name" when it is a plain
// identifier, else `["odd key"]`.
func jsonKey(k string) string {
	plain := k != ""
	for i := 0; i < len(k) && plain; i++ {
		c := k[i]
		plain = c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || (i > 0 && '0' <= c && c <= '9')
	}
	if plain {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

// show quotes nothing but bounds a value's length for a one-line message.
func show(s string) string {
	const limit = 60
	if s == "" {
		return `""`
	}
	if len(s) > limit {
		cut := limit
		for cut > 0 && s[cut]&0xC0 == 0x80 { // don't split a UTF-8 sequence
			cut--
		}
		return s[:cut] + "…"
	}
	return s
}
