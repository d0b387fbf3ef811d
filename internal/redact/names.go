package redact

// The one list of secret-looking names for the whole tool. A name is
// normalised before it is compared: lower-cased, with everything but
// letters and digits dropped ("X-Api-Key" → "xapikey", "client_secret" →
// "clientsecret").
var (
	// secretSuffixes: a recorded header, query parameter or body field is
	// secret when its normalised name ends with one of these ("api_key",
	// "X-Auth-Token", "client_secret", "sessionId"), but not "author",
	// "max_tokens" or "sort_key".
	secretSuffixes = []string{
		"token", "password", "passwd", "passphrase", "secret", "apikey", "accesskey",
		"secretkey", "privatekey", "session", "sessionid", "auth", "authorization",
		"cookie", "credential", "credentials", "signature", "jwt",
	}
	// secretExact: names that are secret only on their own ("pwd", not
	// "cwd"; "pass", not "bypass").
	secretExact = []string{"pwd", "pass", "sig"}
	// notSecret: names ending with one of these are not secret although
	// they end with a secret word: pagination cursors.
	notSecret = []string{"pagetoken", "nexttoken", "continuationtoken"}
	// envWords: an environment variable or a header shown in a report is
	// masked when its name contains one of secretSuffixes or these
	// (STRIPE_KEY, PGPASSWORD); masking there costs nothing, so it is
	// broader than for traffic.
	envWords = []string{"key"}
)

// SecretName reports whether a header or variable name suggests a secret
// value (Authorization, X-Api-Key, DB_PASSWORD, SESSION_ID, …), for what
// replay writes about a run: environment entries and headers in run files
// and reports. It is broader than what recording redacts (any name holding
// a secret word, "key" included; never PWD).
func SecretName(name string) bool {
	for _, ws := range [][]string{secretSuffixes, envWords} {
		for _, w := range ws {
			if containsWord(name, w) {
				return true
			}
		}
	}
	return false
}

// SecretField reports whether a recorded header, query parameter or body
// field name looks secret: its normalised name ends with a word of the
// list, or is one of the short names, and is not a pagination cursor.
func SecretField(name string) bool { return secretField(name) }

func secretField[S ~string | ~[]byte](name S) bool {
	i := len(name) - 1
	for i >= 0 && !isAlnum(name[i]) {
		i--
	}
	if i < 0 {
		return false
	}
	// Only the words ending with name's last letter can match: most names
	// are ruled out by a comparison or two.
	for _, w := range wordsByLast[lower(name[i])] {
		switch {
		case w.kind == wordNot && endsWith(name, w.word):
			return false
		case w.kind == wordSuffix && endsWith(name, w.word), w.kind == wordExact && equalsNorm(name, w.word):
			return true
		}
	}
	return false
}

// A word of the list and how it matches.
type word struct {
	word string
	kind int
}

const (
	wordNot    = iota // a name ending with it is not secret
	wordSuffix        // a name ending with it is secret
	wordExact         // a name that is it is secret
)

// wordsByLast indexes the list by the words' last letter; the exceptions
// come first in each entry.
var wordsByLast = func() (t [256][]word) {
	for _, g := range []struct {
		kind  int
		words []string
	}{{wordNot, notSecret}, {wordSuffix, secretSuffixes}, {wordExact, secretExact}} {
		for _, w := range g.words {
			t[w[len(w)-1]] = append(t[w[len(w)-1]], word{w, g.kind})
		}
	}
	return t
}()

// endsWith reports whether name, normalised, ends with w (lower case,
// letters and digits only). It does not allocate.
func endsWith[S ~string | ~[]byte](name S, w string) bool {
	_, ok := suffixAt(name, w)
	return ok
}

// suffixAt matches w against the end of name, normalised, and returns the
// index in name before the match.
func suffixAt[S ~string | ~[]byte](name S, w string) (int, bool) {
	i := len(name) - 1
	for j := len(w) - 1; j >= 0; j-- {
		for i >= 0 && !isAlnum(name[i]) {
			i--
		}
		if i < 0 || lower(name[i]) != w[j] {
			return 0, false
		}
		i--
	}
	return i, true
}

// equalsNorm reports whether name, normalised, is w.
func equalsNorm[S ~string | ~[]byte](name S, w string) bool {
	i, ok := suffixAt(name, w)
	if !ok {
		return false
	}
	for ; i >= 0; i-- {
		if isAlnum(name[i]) {
			return false
		}
	}
	return true
}

// containsWord reports whether name, lower-cased, contains w.
func containsWord(name, w string) bool {
	for i := 0; i+len(w) <= len(name); i++ {
		j := 0
		for j < len(w) && lower(name[i+j]) == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// normalise returns name lower-cased with everything but letters and
// digits dropped.
func normalise(name string) string {
	b := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		if isAlnum(name[i]) {
			b = append(b, lower(name[i]))
		}
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
