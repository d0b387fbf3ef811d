package redact

import "strings"

// urlPasswords replaces the password of every URL in s
// (scheme://user:password@host) with urlMask; s comes back as it is when
// it holds none, without allocating.
func urlPasswords(s string) string { return urlPasswordsWith(s, urlMask) }

// urlPasswordsWith is urlPasswords with mask as the placeholder.
func urlPasswordsWith(s, mask string) string {
	if strings.IndexByte(s, '@') < 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		k := strings.Index(s[i:], "://")
		if k < 0 {
			break
		}
		start := i + k + 3
		end := start
		for end < len(s) && !strings.ContainsRune("/?#\"'\\<> \t\r\n", rune(s[end])) {
			end++
		}
		auth := s[start:end]
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			if c := strings.IndexByte(auth[:at], ':'); c >= 0 && c+1 < at && auth[c+1:at] != mask {
				b.WriteString(s[last : start+c+1])
				b.WriteString(mask)
				last = start + at
			}
		}
		i = max(end, start)
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}
