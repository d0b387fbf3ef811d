package redact

import "strings"

// Command masks the secrets in a shell command line for run files, logs
// and reports: passwords in URLs (postgres://u:[REDACTED]@host/db), the
// values of NAME=value words whose NAME looks secret (PGPASSWORD=…), and
// the values of flags whose names look secret (--password=…,
// --password …, --api-key …). Other text comes back as it is.
func Command(cmd string) string {
	if cmd == "" {
		return cmd
	}
	var b strings.Builder
	maskNext := false
	for i := 0; i < len(cmd); {
		if isSpace(cmd[i]) {
			b.WriteByte(cmd[i])
			i++
			continue
		}
		j := i
		for j < len(cmd) && !isSpace(cmd[j]) {
			j++
		}
		word := cmd[i:j]
		i = j
		if maskNext && !strings.HasPrefix(word, "-") {
			b.WriteString(maskValue(word))
			i = closeQuote(cmd, word, i)
			maskNext = false
			continue
		}
		maskNext = false
		bare := strings.TrimLeft(word, `'"`)
		lead := word[:len(word)-len(bare)]
		flag := strings.HasPrefix(bare, "-")
		name, value, hasValue := strings.Cut(strings.TrimLeft(bare, "-"), "=")
		switch {
		case hasValue && (flag || isIdent(name)) && SecretName(name) && value != "":
			b.WriteString(lead + bare[:len(bare)-len(value)] + maskValue(value))
			i = closeQuote(cmd, value, i)
		case flag && !hasValue && len(name) > 1 && SecretName(name):
			b.WriteString(word)
			maskNext = true
		default:
			b.WriteString(word)
		}
	}
	return urlPasswordsWith(b.String(), Mask)
}

// maskValue returns the mask in place of v, keeping the quotes that close
// it.
func maskValue(v string) string {
	trimmed := strings.TrimRight(v, `'"`)
	return Mask + v[len(trimmed):]
}

// closeQuote returns where the masked value v, which ends at i in cmd,
// really ends: after its closing quote when v opens a quote it does not
// close (a value with spaces), else i. The mask already stands in for it.
func closeQuote(cmd, v string, i int) int {
	if v == "" || v[0] != '\'' && v[0] != '"' {
		return i
	}
	if len(v) > 1 && v[len(v)-1] == v[0] {
		return i
	}
	if k := strings.IndexByte(cmd[i:], v[0]); k >= 0 {
		return i + k + 1
	}
	return len(cmd)
}

func isIdent(s string) bool {
	if s == "" || '0' <= s[0] && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isAlnum(c) || c == '_') {
			return false
		}
	}
	return true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
