package shell

import "strings"

// Quote returns s as one word for a POSIX shell: unchanged when it holds
// only characters the shell takes literally (letters, digits and
// "/._-+:@%,="), else between single quotes, each single quote in s written
// as a closing quote, a backslash-escaped quote and an opening quote. The
// empty string becomes an empty pair of single quotes.
func Quote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%,=", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
