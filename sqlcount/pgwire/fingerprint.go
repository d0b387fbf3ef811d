package pgwire

// Fingerprint returns sql with literals and parameters folded to "?", so
// that statements differing only in their values share one fingerprint:
// "SELECT * FROM order_items WHERE order_id = 42" and "… = $1" both give
// "SELECT * FROM order_items WHERE order_id = ?". Negative numbers and
// booleans fold too, lists of values (IN (1, 2, 3), IN ($1, $2), ARRAY[…],
// repeated VALUES rows) fold to one element (a function's arguments stay
// apart), comments are removed and the tokens are laid out one way,
// whatever the spacing: "select json_build_object(?::text, (?))",
// "WHERE id = ANY(?)", "INSERT INTO t (a, b) VALUES (?)" (see normalize).
// Keywords and identifiers stay as written. Text that is only white space
// and comments gives "".
func Fingerprint(sql string) string {
	var s scanner
	s.scan([]byte(sql), false)
	sp := s.spans[0]
	return fingerprintShape(string(s.shape[sp.shapeStart:sp.shapeEnd]))
}

// fingerprintShape fingerprints a shape (see scanner).
func fingerprintShape(shape string) string {
	if shape == "" {
		return ""
	}
	return normalize(shape)
}
