package mock

import (
	"net/http"
	"strings"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// defaultVolatileKeys name query parameters and JSON object members whose
// values change from one run to the next and are ignored at the loose level
// (doc.go lists them). Keys are compared case-insensitively with '-', '_' and
// '.' removed, so "request_id", "requestId" and "X-Request-ID" all match
// "requestid". A key also counts as volatile when it ends with one of
// volatileSuffixes.
var defaultVolatileKeys = []string{
	"ts", "timestamp", "time", "now", "nonce", "cnonce",
	"requestid", "reqid", "correlationid", "traceid", "spanid", "traceparent",
	"idempotencykey", "signature", "sig", "cachebuster", "cb", "rand", "random",
	"expires", "xamzdate", "xamzsignature", "xamzcredential", "xamzsecuritytoken",
}

// volatileSuffixes: a normalised key ending with one of these is volatile too
// (e.g. "clientTimestamp", "x_request_id").
var volatileSuffixes = []string{"timestamp", "nonce", "requestid", "correlationid", "idempotencykey", "signature"}

// volatility decides which keys are volatile.
type volatility struct {
	keys map[string]bool
}

func newVolatility(extra []string) volatility {
	v := volatility{keys: map[string]bool{}}
	for _, k := range defaultVolatileKeys {
		v.keys[normKey(k)] = true
	}
	for _, k := range extra {
		if n := normKey(k); n != "" {
			v.keys[n] = true
		}
	}
	return v
}

// key reports whether the values of key k are volatile. A key of underscores
// only ("_", jQuery's cache buster) is.
func (v volatility) key(k string) bool {
	if k != "" && strings.Trim(k, "_") == "" {
		return true
	}
	n := normKey(k)
	if n == "" {
		return false
	}
	if v.keys[n] {
		return true
	}
	for _, s := range volatileSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// normKey lower-cases k and drops '-', '_' and '.'.
func normKey(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '-' || c == '_' || c == '.':
		case 'A' <= c && c <= 'Z':
			b.WriteByte(c + 'a' - 'A')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// volatileValue reports whether s looks like a value that differs on every
// call whatever its key: a UUID, a long hex string (trace ids, hashes,
// signatures), an ISO 8601 / RFC 3339 date-time or an HTTP date, or a Unix
// time in seconds, milliseconds, microseconds or nanoseconds between 2001 and
// 2100.
func volatileValue(s string) bool {
	switch {
	case len(s) < 10:
		return false
	case snapshots.IsUUID(s), isLongHex(s), isEpoch(s), isDateTime(s):
		return true
	}
	return false
}

// isLongHex: at least 16 hex digits with both a digit and a letter, so that
// long decimal numbers and words are not taken for hashes.
func isLongHex(s string) bool {
	if len(s) < 16 {
		return false
	}
	var digit, letter bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			digit = true
		case 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F':
			letter = true
		default:
			return false
		}
	}
	return digit && letter
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// isEpoch: a Unix time (optionally with a fraction) in seconds, ms, µs or ns
// between 2001-09-09 (1e9 s) and 2100.
func isEpoch(s string) bool {
	intPart, frac, hasFrac := strings.Cut(s, ".")
	if hasFrac && (frac == "" || !allDigits(frac)) {
		return false
	}
	if !allDigits(intPart) {
		return false
	}
	const maxSec = "4102444800" // 2100-01-01
	switch len(intPart) {
	case 10:
		return intPart >= "1000000000" && intPart < maxSec
	case 13, 16, 19:
		return !hasFrac && intPart >= "1000000000" && intPart[:10] < maxSec
	}
	return false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDateTime: an RFC 3339 / ISO 8601 date and time (a date alone is not
// volatile: it usually selects data), or an HTTP date.
func isDateTime(s string) bool {
	if len(s) >= 16 && allDigits(s[0:4]) && s[4] == '-' && allDigits(s[5:7]) && s[7] == '-' &&
		allDigits(s[8:10]) && (s[10] == 'T' || s[10] == 't' || s[10] == ' ') &&
		allDigits(s[11:13]) && s[13] == ':' && allDigits(s[14:16]) {
		return true
	}
	if _, err := http.ParseTime(s); err == nil {
		return true
	}
	_, err := time.Parse(time.RFC1123Z, s)
	return err == nil
}
