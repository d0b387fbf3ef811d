package sqlcore

import "bytes"

var traceparentKey = []byte("traceparent")

// TraceFromComment finds traceparent='00-<trace id>-<span id>-<flags>' in a
// comment, its value URL-encoded or not, and returns the trace id.
func TraceFromComment(c []byte) (id [32]byte, ok bool) {
	for {
		k := bytes.Index(c, traceparentKey)
		if k < 0 {
			return id, false
		}
		c = c[k+len(traceparentKey):]
		// Decode what follows (percent escapes), up to what a value needs.
		var buf [96]byte
		n := 0
		for j := 0; j < len(c) && n < len(buf); j++ {
			b := c[j]
			if b == '%' && j+2 < len(c) && isHex(c[j+1]) && isHex(c[j+2]) {
				b = unhex(c[j+1])<<4 | unhex(c[j+2])
				j += 2
			}
			buf[n] = b
			n++
		}
		if id, ok = parseTraceparentValue(buf[:n]); ok {
			return id, true
		}
	}
}

// parseTraceparentValue parses `='00-…-…-01'` (spaces and quotes optional).
func parseTraceparentValue(b []byte) (id [32]byte, ok bool) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i >= len(b) || b[i] != '=' {
		return id, false
	}
	i++
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i < len(b) && (b[i] == '\'' || b[i] == '"') {
		i++
	}
	v := b[i:]
	// version(2) - trace id(32) - span id(16) - flags(2)
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return id, false
	}
	allZero := true
	for j := 0; j < 55; j++ {
		if j == 2 || j == 35 || j == 52 {
			continue
		}
		if !isHex(v[j]) {
			return id, false
		}
	}
	for j := 0; j < 32; j++ {
		c := v[3+j]
		if 'A' <= c && c <= 'F' {
			c += 'a' - 'A'
		}
		if c != '0' {
			allZero = false
		}
		id[j] = c
	}
	if allZero || (v[0]|0x20 == 'f' && v[1]|0x20 == 'f') {
		return id, false
	}
	return id, true
}

func isHex(c byte) bool { return ('0' <= c && c <= '9') || ('a' <= c|0x20 && c|0x20 <= 'f') }

func unhex(c byte) byte {
	if '0' <= c && c <= '9' {
		return c - '0'
	}
	return c | 0x20 - 'a' + 10
}
