package inflight

// TraceID returns a W3C trace id in lower case, from the id itself (32 hex
// digits) or a whole traceparent value ("00-<trace id>-<span id>-<flags>"),
// or "" when s is neither or the id is all zero (invalid).
func TraceID(s string) string {
	if len(s) == 55 {
		if s[2] != '-' || s[35] != '-' || s[52] != '-' || !allHex(s[:2]) || !allHex(s[36:52]) || !allHex(s[53:]) ||
			s[0]|0x20 == 'f' && s[1]|0x20 == 'f' {
			return ""
		}
		s = s[3:35]
	}
	if len(s) != 32 || !allHex(s) {
		return ""
	}
	var b [32]byte
	nonZero, lower := false, true
	for i := range 32 {
		c := s[i]
		if 'A' <= c && c <= 'F' {
			c += 'a' - 'A'
			lower = false
		}
		nonZero = nonZero || c != '0'
		b[i] = c
	}
	switch {
	case !nonZero:
		return ""
	case lower:
		return s
	}
	return string(b[:])
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
