package redact

import "bytes"

// json redacts a JSON body: the scalar value of every object member whose
// name looks secret becomes "[REDACTED]", and passwords inside URLs in
// string values are masked; every other byte stays as it was. It scans the
// bytes once, without decoding, so that it works on bodies cut short
// (at the body limit) and on invalid JSON, and never fails. It returns the
// new bytes and true when it changed something, else b and false, without
// allocating.
func (r *Redactor) json(b []byte) ([]byte, bool) {
	var (
		out      []byte
		last     int
		stackBuf [64]bool // true: object
		stack    = stackBuf[:0]
		inObject bool // the innermost container is an object
		wantKey  bool // the next string is a member name
		secret   bool // the next value belongs to a secret member
	)
	replace := func(start, end int, with string) {
		out = append(out, b[last:start]...)
		out = append(out, with...)
		last = end
	}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '{' || c == '[':
			stack = append(stack, c == '{')
			inObject, wantKey, secret = c == '{', c == '{', false
			i++
		case c == '}' || c == ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			inObject = len(stack) > 0 && stack[len(stack)-1]
			wantKey, secret = false, false
			i++
		case c == ',':
			wantKey, secret = inObject, false
			i++
		case c == '"':
			end := stringEnd(b, i)
			switch {
			case wantKey:
				secret = r.secretField(b[i+1 : max(i+1, end-1)])
				wantKey = false
			case secret:
				if !same(b[i:end], jsonMask) {
					replace(i, end, jsonMask)
				}
				secret = false
			default:
				if indexByte(b[i:end], '@') >= 0 {
					if s := string(b[i:end]); urlPasswordsWith(s, Mask) != s {
						m := urlPasswordsWith(s, Mask)
						replace(i, end, m)
					}
				}
			}
			i = end
		case c == '-' || '0' <= c && c <= '9':
			end := i + 1
			for end < len(b) && numberByte(b[end]) {
				end++
			}
			if secret {
				replace(i, end, jsonMask)
				secret = false
			}
			i = end
		default:
			i++
		}
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}

func (r *Redactor) secretField(name []byte) bool {
	return secretField(name) || r.fields != nil && extra(r.fields, name)
}

// stringEnd returns the index after the string that starts with the quote
// at b[i]: after its closing quote, or len(b) when it is cut short.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return len(b)
		}
		j += k
		n := 0 // backslashes before the quote
		for n < j-i-1 && b[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
	return len(b)
}

func numberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}
