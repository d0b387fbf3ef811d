package redact

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// Redactor replaces secrets in recorded exchanges with snapshots.Redacted:
// the values of headers, query parameters and JSON or form body fields
// whose names look secret (SecretField, plus the names of its Config), and
// passwords inside URLs. It does not allocate for an exchange that holds
// nothing to redact. Safe for concurrent use.
type Redactor struct {
	headers, query, fields map[string]bool // normalised extra names
	off                    bool
	desc                   string
}

var _ snapshots.Redactor = (*Redactor)(nil)

// urlMask is the placeholder inside a URL or a form: snapshots.Redacted
// percent-encoded, so that it decodes to the placeholder.
const urlMask = "%5BREDACTED%5D"

// jsonMask is the placeholder as a JSON string.
const jsonMask = `"` + Mask + `"`

// New returns the redactor of cfg; with cfg.Off it redacts nothing.
func New(cfg Config) *Redactor {
	if cfg.Off {
		return &Redactor{off: true, desc: cfg.String()}
	}
	set := func(names []string) map[string]bool {
		var m map[string]bool // nil when empty: nothing to look up
		for _, n := range names {
			if k := normalise(n); k != "" {
				if m == nil {
					m = map[string]bool{}
				}
				m[k] = true
			}
		}
		return m
	}
	return &Redactor{headers: set(cfg.Headers), query: set(cfg.Query), fields: set(cfg.Fields), desc: cfg.String()}
}

// String describes the redaction (Config.String).
func (r *Redactor) String() string { return r.desc }

// Redact redacts e in place. It never changes what e's fields point to
// (header maps and bodies may be shared with live traffic): a field with
// something to redact is replaced by a redacted copy.
func (r *Redactor) Redact(e *snapshots.Exchange) {
	if r.off {
		return
	}
	e.URL = r.url(e.URL)
	e.Error = urlPasswords(e.Error)
	e.RequestHeader = r.header(e.RequestHeader)
	e.ResponseHeader = r.header(e.ResponseHeader)
	e.ResponseTrailer = r.header(e.ResponseTrailer)
	if b, ok := r.body(e.RequestHeader, e.RequestBody); ok {
		e.RequestBodySize += int64(len(b) - len(e.RequestBody))
		e.RequestBody = b
	}
	if b, ok := r.body(e.ResponseHeader, e.ResponseBody); ok {
		e.ResponseBodySize += int64(len(b) - len(e.ResponseBody))
		e.ResponseBody = b
	}
}

// extra reports whether name, normalised, is one of the names in set (a
// Config's few added names).
func extra[S ~string | ~[]byte](set map[string]bool, name S) bool {
	for k := range set {
		if equalsNorm(name, k) {
			return true
		}
	}
	return false
}

func (r *Redactor) secretHeader(name string) bool {
	return secretField(name) || r.headers != nil && extra(r.headers, name)
}

// header returns h, or a copy with the secret values replaced.
func (r *Redactor) header(h http.Header) http.Header {
	var out http.Header
	for k, vs := range h {
		secret := r.secretHeader(k)
		for i, v := range vs {
			var nv string
			if secret {
				nv = maskHeader(k, v)
			} else {
				nv = urlPasswords(v)
			}
			if nv == v {
				continue
			}
			if out == nil {
				out = h.Clone()
			}
			if secret {
				masked := make([]string, len(vs))
				for j, v := range vs {
					masked[j] = maskHeader(k, v)
				}
				out[k] = masked
				break
			}
			out[k][i] = nv
		}
	}
	if out == nil {
		return h
	}
	return out
}

// maskHeader is the secret value v of header k masked. Credentials keep
// their scheme ("Bearer [REDACTED]", "Basic [REDACTED]"), so that what
// replays them knows which kind of credential to supply.
func maskHeader(k, v string) string {
	if !strings.EqualFold(k, "Authorization") && !strings.EqualFold(k, "Proxy-Authorization") {
		return Mask
	}
	scheme, rest, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || strings.TrimSpace(rest) == "" || !isToken(scheme) {
		return Mask
	}
	return scheme + " " + Mask
}

// isToken reports whether s is an HTTP token (RFC 9110), as an auth scheme
// is.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// url redacts the password of u and the values of its secret query
// parameters.
func (r *Redactor) url(u string) string {
	u = urlPasswords(u)
	q := strings.IndexByte(u, '?')
	if q < 0 {
		return u
	}
	end := len(u)
	if f := strings.IndexByte(u[q:], '#'); f >= 0 {
		end = q + f
	}
	if red, ok := pairs(u[q+1:end], r.query); ok {
		return u[:q+1] + string(red) + u[end:]
	}
	return u
}

// body returns b redacted and true, or b and false when nothing changed.
func (r *Redactor) body(h http.Header, b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return b, false
	}
	ct := h.Get("Content-Type")
	if enc := h.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		if strings.EqualFold(enc, "gzip") {
			return r.gzipBody(ct, b)
		}
		return b, false
	}
	return r.plainBody(ct, b)
}

// plainBody redacts a body that is not content-encoded.
func (r *Redactor) plainBody(ct string, b []byte) ([]byte, bool) {
	switch {
	case strings.Contains(ct, "json"), ct == "" && looksJSON(b):
		return r.json(b)
	case isForm(ct):
		if out, ok := pairs(b, r.fields); ok {
			return out, true
		}
	}
	return b, false
}

// isForm reports whether content type ct is
// application/x-www-form-urlencoded, parameters aside.
func isForm(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "application/x-www-form-urlencoded")
}

func looksJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// pairs redacts the values of the secret names of a query string or form
// body (SecretField, or one of extras), keeping every other byte; it
// returns the new bytes and true when it changed something, else nil and
// false. It does not allocate when nothing changes.
func pairs[S ~string | ~[]byte](b S, extras map[string]bool) ([]byte, bool) {
	var out []byte
	last := 0
	for start := 0; start < len(b); {
		end := indexByte(b[start:], '&')
		if end < 0 {
			end = len(b)
		} else {
			end += start
		}
		pair := b[start:end]
		if eq := indexByte(pair, '='); eq >= 0 && eq+1 < len(pair) && !same(pair[eq+1:], urlMask) &&
			secretName(unescapeName(pair[:eq]), extras) {
			out = append(out, b[last:start+eq+1]...)
			out = append(out, urlMask...)
			last = end
		}
		start = end + 1
	}
	if out == nil {
		return nil, false
	}
	return append(out, b[last:]...), true
}

// secretName reports whether name looks secret or is one of extras.
func secretName[S ~string | ~[]byte](name S, extras map[string]bool) bool {
	return secretField(name) || extras != nil && extra(extras, name)
}

func indexByte[S ~string | ~[]byte](s S, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// same reports whether s holds w.
func same[S ~string | ~[]byte](s S, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != w[i] {
			return false
		}
	}
	return true
}

// unescapeName decodes a percent-encoded name; it allocates only when
// there is something to decode.
func unescapeName[S ~string | ~[]byte](name S) S {
	if indexByte(name, '%') < 0 {
		return name
	}
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		if name[i] == '%' && i+2 < len(name) && isHex(name[i+1]) && isHex(name[i+2]) {
			out = append(out, unhex(name[i+1])<<4|unhex(name[i+2]))
			i += 2
			continue
		}
		out = append(out, name[i])
	}
	return S(out)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
