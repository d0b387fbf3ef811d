package mysqlwire

import (
	"strings"

	sqllexer "github.com/DataDog/go-sqllexer"
)

// Fingerprint returns sql with literals and parameters folded to "?", so
// that statements differing only in their values share one fingerprint:
// "SELECT c FROM sbtest1 WHERE id=42" and "… WHERE id=?" both give
// "SELECT c FROM sbtest1 WHERE id = ?". Strings of either quote, numbers
// (negative, hexadecimal, bit), prefixed strings (X'ff', _utf8mb4'x') and
// placeholders fold; lists of them (IN (1, 2, 3), repeated VALUES rows)
// fold to one; comments are removed and the tokens are laid out by
// go-sqllexer's normalizer, MySQL dialect. Keywords and identifiers
// (backquoted or not) stay as written. Text that is only white space and
// comments gives "".
func Fingerprint(sql string) string {
	var s scanner
	s.scan([]byte(sql), false)
	sp := s.spans[0]
	return fingerprintShape(string(s.shape[sp.shapeStart:sp.shapeEnd]))
}

// normalizer lays shapes out; it keeps no state between calls.
var normalizer = sqllexer.NewNormalizer(
	sqllexer.WithKeepSQLAlias(true),
	sqllexer.WithKeepIdentifierQuotation(true),
	sqllexer.WithRemoveSpaceBetweenParentheses(true),
)

// fingerprintShape fingerprints a shape (see scanner): its literals are
// already "?", so go-sqllexer only normalizes it.
func fingerprintShape(shape string) string {
	if shape == "" {
		return ""
	}
	out, _, err := normalizer.Normalize(shape, sqllexer.WithDBMS(sqllexer.DBMSMySQL))
	if err != nil || out == "" {
		return strings.TrimSpace(shape)
	}
	return out
}
