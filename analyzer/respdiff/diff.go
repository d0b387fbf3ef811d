package respdiff

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/replaykit/replay/snapshots"
)

// Answer is one answer to a request, as compared.
type Answer struct {
	// Status is the status code.
	Status int
	// Header holds the headers (only the compared ones are looked at).
	Header http.Header
	// Body is the body, decoded (no Content-Encoding left).
	Body []byte
	// BodySize is the full decoded size; zero means len(Body).
	BodySize int64
	// Truncated says Body is only the start of the body.
	Truncated bool
	parsed    *parsed // Body decoded as JSON once, when set (Side.Add sets it)
}

// parsed is an answer's body decoded as JSON.
type parsed struct {
	once sync.Once
	v    any
	err  error
}

// json is the body decoded as JSON, decoded once when the answer caches it.
func (a Answer) json() (any, error) {
	if a.parsed == nil {
		return decodeJSON(a.Body)
	}
	a.parsed.once.Do(func() { a.parsed.v, a.parsed.err = decodeJSON(a.Body) })
	return a.parsed.v, a.parsed.err
}

// FromSample is the Answer of a captured response.
func FromSample(s *snapshots.ResponseSample) Answer {
	return Answer{Status: s.Status, Header: s.Header, Body: s.Body, BodySize: s.BodySize, Truncated: s.Truncated}
}

// maxDecoded bounds the body FromExchange decodes: the capture limit of
// the answers it is compared with.
const maxDecoded = 64 << 10

// FromExchange is the Answer of a recorded exchange's response, its body
// decoded from its Content-Encoding (gzip, deflate) up to 64 KiB; a body
// cut at recording, or that does not decode, is Truncated.
func FromExchange(e *snapshots.Exchange) Answer {
	a := Answer{Status: e.Status, Header: e.ResponseHeader, Body: e.ResponseBody, BodySize: e.ResponseBodySize,
		Truncated: e.ResponseTruncated()}
	enc := strings.ToLower(strings.TrimSpace(e.ResponseHeader.Get("Content-Encoding")))
	if enc == "" || enc == "identity" || len(a.Body) == 0 {
		return a
	}
	var r io.Reader
	var err error
	switch enc {
	case "gzip", "x-gzip":
		r, err = gzip.NewReader(bytes.NewReader(a.Body))
	case "deflate":
		if r, err = zlib.NewReader(bytes.NewReader(a.Body)); err != nil {
			r, err = flate.NewReader(bytes.NewReader(a.Body)), nil
		}
	default:
		a.Truncated = true // an encoding we cannot undo: compared whole
		return a
	}
	if err != nil {
		a.Truncated = true
		return a
	}
	body, err := io.ReadAll(io.LimitReader(r, maxDecoded+1))
	a.Body, a.BodySize = body, int64(len(body))
	if err != nil || len(body) > maxDecoded {
		a.Body, a.Truncated = body[:min(len(body), maxDecoded)], true
	}
	return a
}

// The kinds of a Diff.
const (
	KindChanged   = "changed"   // another value, or another type
	KindDropped   = "dropped"   // the candidate lacks it
	KindAdded     = "added"     // only the candidate has it
	KindReordered = "reordered" // an array with the same items in another order
	KindHash      = "hash"      // answers beyond the sample, by body hash
)

// Diff is one difference between two answers.
type Diff struct {
	// Path is where: status, header:NAME, body, line:N or a JSON path.
	Path string
	// Kind is one of the Kind constants.
	Kind string
	// Baseline and Candidate are the two sides.
	Baseline, Candidate Value
	segs                []seg // a JSON path's steps
}

// General is the path differences are grouped by (Generalize).
func (d Diff) General() string {
	if d.segs != nil {
		return formatPath(d.segs, true)
	}
	return Generalize(d.Path)
}

// pairEnv is what a comparison of two answers needs besides them.
type pairEnv struct {
	// headers are the headers compared.
	headers []string
	// unordered reports whether the array at a JSON path is a multiset.
	unordered func([]seg) bool
	// hostA and hostB are the host:port each answer was served from: in
	// strings, headers and text they read as {host} ("" leaves them).
	hostA, hostB string
	// hide reports whether the value at a JSON path is ignored: example
	// diffs show it as "(ignored)"; nil hides nothing.
	hide func([]seg) bool
}

// hostMark is what a side's own host:port reads as.
const hostMark = "{host}"

// norm replaces host in s by hostMark.
func norm(s, host string) string {
	if host == "" || !strings.Contains(s, host) {
		return s
	}
	return strings.ReplaceAll(s, host, hostMark)
}

// diffAnswers compares two answers: status, the headers named, the body.
func diffAnswers(a, b Answer, env *pairEnv) []Diff {
	var out []Diff
	if a.Status != b.Status {
		out = append(out, Diff{Path: "status", Kind: KindChanged,
			Baseline: Value{Type: "status", Text: strconv.Itoa(a.Status)}, Candidate: Value{Type: "status", Text: strconv.Itoa(b.Status)}})
	}
	for _, h := range env.headers {
		va, vb := a.Header.Values(h), b.Header.Values(h)
		if slices.EqualFunc(va, vb, func(x, y string) bool { return norm(x, env.hostA) == norm(y, env.hostB) }) {
			continue
		}
		d := Diff{Path: "header:" + h, Kind: KindChanged, Baseline: headerValue(va), Candidate: headerValue(vb)}
		if len(vb) == 0 {
			d.Kind = KindDropped
		} else if len(va) == 0 {
			d.Kind = KindAdded
		}
		out = append(out, d)
	}
	return append(out, diffBodies(a, b, env)...)
}

func headerValue(vs []string) Value {
	if len(vs) == 0 {
		return Absent
	}
	return Value{Type: "header", Text: quote(strings.Join(vs, ", "))}
}

// diffBodies compares two bodies: JSON structurally, text by lines, the
// rest (binary, JSON facing something else) whole; a body cut short as far
// as both go and by size.
func diffBodies(a, b Answer, env *pairEnv) []Diff {
	if bytes.Equal(a.Body, b.Body) && a.size() == b.size() {
		return nil
	}
	if a.Truncated || b.Truncated {
		// A body cut short (at recording, or at the capture limit) is
		// compared as far as both go, and by size.
		n := min(len(a.Body), len(b.Body))
		if a.size() == b.size() && bytes.Equal(a.Body[:n], b.Body[:n]) {
			return nil
		}
	} else {
		if looksJSON(a.Header.Get("Content-Type"), a.Body) || looksJSON(b.Header.Get("Content-Type"), b.Body) {
			va, ea := a.json()
			vb, eb := b.json()
			switch {
			case ea == nil && eb == nil:
				w := walker{env: env}
				w.value(va, vb)
				return w.diffs
			case ea == nil || eb == nil:
				return []Diff{{Path: "body", Kind: KindChanged, Baseline: bodyValue(a, jsonWord(ea)), Candidate: bodyValue(b, jsonWord(eb))}}
			}
		}
		if isText(a.Body) && isText(b.Body) {
			return textDiffs(norm(string(a.Body), env.hostA), norm(string(b.Body), env.hostB))
		}
	}
	return []Diff{{Path: "body", Kind: KindChanged, Baseline: bodyValue(a, kindWord(a)), Candidate: bodyValue(b, kindWord(b))}}
}

func jsonWord(err error) string {
	if err == nil {
		return "JSON"
	}
	return "not JSON"
}

func kindWord(a Answer) string {
	switch {
	case a.Truncated:
		return "cut"
	case isText(a.Body):
		return "text"
	}
	return "binary"
}

func (a Answer) size() int64 { return max(a.BodySize, int64(len(a.Body))) }

func validUTF8(b []byte) bool { return utf8.Valid(b) }

// fnv64 is the hash of snapshots.ResponseHash (snapshots.HashBody: the
// replayer hashes answers so, and recorded bodies must hash alike).
func fnv64(b []byte) uint64 { return snapshots.HashBody(b) }

// walker compares two decoded JSON documents, collecting differences.
type walker struct {
	segs  []seg
	diffs []Diff
	env   *pairEnv
}

func (w *walker) add(kind string, a, b Value) {
	segs := slices.Clone(w.segs)
	if segs == nil {
		segs = []seg{}
	}
	w.diffs = append(w.diffs, Diff{Path: formatPath(segs, false), Kind: kind, Baseline: a, Candidate: b, segs: segs})
}

// value compares a and b at the walker's path.
func (w *walker) value(a, b any) {
	switch x := a.(type) {
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			w.object(x, y)
			return
		}
	case []any:
		if y, ok := b.([]any); ok {
			w.array(x, y)
			return
		}
	case string:
		if y, ok := b.(string); ok && norm(x, w.env.hostA) == norm(y, w.env.hostB) {
			return
		}
	}
	_, aAbsent := a.(absent)
	_, bAbsent := b.(absent)
	switch {
	case sameScalar(a, b):
	case bAbsent:
		w.add(KindDropped, describe(a), Absent)
	case aAbsent:
		w.add(KindAdded, Absent, describe(b))
	default:
		w.add(KindChanged, describe(a), describe(b))
	}
}

func (w *walker) object(a, b map[string]any) {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		va, ok := a[k]
		if !ok {
			va = absent{}
		}
		vb, ok := b[k]
		if !ok {
			vb = absent{}
		}
		w.segs = append(w.segs, seg{kind: segKey, key: k})
		w.value(va, vb)
		w.segs = w.segs[:len(w.segs)-1]
	}
}

// array compares two arrays: as multisets at an unordered path (the items
// of one side only are then compared pairwise, in order), else item by
// item, a mere reordering being one difference.
func (w *walker) array(a, b []any) {
	if w.env.unordered != nil && w.env.unordered(w.segs) {
		a, b = withoutCommon(a, b)
	} else if len(a) == len(b) && reordered(a, b) {
		w.add(KindReordered, describe(a), describe(b))
		return
	}
	for i := range max(len(a), len(b)) {
		var va, vb any = absent{}, absent{}
		if i < len(a) {
			va = a[i]
		}
		if i < len(b) {
			vb = b[i]
		}
		w.segs = append(w.segs, seg{kind: segIndex, index: i})
		w.value(va, vb)
		w.segs = w.segs[:len(w.segs)-1]
	}
}

// reordered reports whether a and b, of one length, hold the same items
// in another order: the items at the indices where they differ are the
// same multiset (at least two of them).
func reordered(a, b []any) bool {
	var ca, cb []string
	for i := range a {
		if !deepEqual(a[i], b[i]) {
			ca, cb = append(ca, canon(a[i])), append(cb, canon(b[i]))
		}
	}
	if len(ca) < 2 {
		return false
	}
	slices.Sort(ca)
	slices.Sort(cb)
	return slices.Equal(ca, cb)
}

func canons(a []any) []string {
	out := make([]string, len(a))
	for i, v := range a {
		out[i] = canon(v)
	}
	return out
}

// withoutCommon removes the items a and b have in common (as many times
// as both have them), keeping the order of the rest.
func withoutCommon(a, b []any) ([]any, []any) {
	count := map[string]int{}
	cb := canons(b)
	for _, c := range cb {
		count[c]++
	}
	var ra []any
	for i, c := range canons(a) {
		if count[c] > 0 {
			count[c]--
			continue
		}
		ra = append(ra, a[i])
	}
	var rb []any
	for i := len(b) - 1; i >= 0; i-- {
		// What count still holds of an item is how many of b's are left
		// over: the last ones.
		if count[cb[i]] > 0 {
			count[cb[i]]--
			rb = append(rb, b[i])
		}
	}
	slices.Reverse(rb)
	return ra, rb
}
