package sqlcount

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqllexer "github.com/DataDog/go-sqllexer"
)

// Fingerprint returns sql with literals and parameters folded to "?", so
// that statements differing only in their values share one fingerprint:
// "SELECT * FROM order_items WHERE order_id = 42" and "… = $1" both give
// "SELECT * FROM order_items WHERE order_id = ?". Negative numbers fold too,
// lists of values (IN (1, 2, 3), IN ($1, $2), ARRAY[…], repeated VALUES
// rows) fold to one element, comments are removed and white space is
// collapsed; keywords and identifiers stay as written. Text that is only
// white space and comments gives "".
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
	o := sqllexer.NewObfuscator(
		sqllexer.WithReplacePositionalParameter(true),
		sqllexer.WithReplaceBoolean(true),
		sqllexer.WithReplaceBindParameter(true),
	)
	n := sqllexer.NewNormalizer(
		sqllexer.WithKeepSQLAlias(true),
		sqllexer.WithKeepIdentifierQuotation(true),
	)
	fp, _, err := sqllexer.ObfuscateAndNormalize(shape, o, n, sqllexer.WithDBMS(sqllexer.DBMSPostgres))
	if err != nil || fp == "" {
		return shape
	}
	return collapseRepeatedGroups(fp)
}

// collapseRepeatedGroups folds "VALUES ( ? ), ( ? ), ( ? )" into
// "VALUES ( ? )" and "IN ( ( ? ), ( ? ) )" into "IN ( ( ? ) )": the rows of a
// multi-row VALUES or a list of tuples, whatever their number.
func collapseRepeatedGroups(fp string) string {
	if !strings.Contains(fp, "), (") {
		return fp
	}
	var b strings.Builder
	i := 0
	for i < len(fp) {
		if fp[i] != '(' {
			b.WriteByte(fp[i])
			i++
			continue
		}
		end := matchParen(fp, i)
		if end < 0 {
			b.WriteString(fp[i:])
			break
		}
		group := fp[i : end+1]
		// Write the group with its inside collapsed, then skip repeats.
		b.WriteByte('(')
		b.WriteString(collapseRepeatedGroups(group[1 : len(group)-1]))
		b.WriteByte(')')
		j := end + 1
		if listStart(fp[:i]) {
			for strings.HasPrefix(fp[j:], ", "+group) {
				j += 2 + len(group)
			}
		}
		i = j
	}
	return b.String()
}

// listStart reports whether a group that follows before starts a list of
// rows or tuples: after VALUES or an opening parenthesis (not after a
// function name, whose arguments the group is).
func listStart(before string) bool {
	if strings.HasSuffix(before, "( ") {
		return true
	}
	before = strings.TrimSuffix(before, " ")
	if before == "" {
		return true // the start of a group's inside (see the recursion)
	}
	return len(before) >= 6 && strings.EqualFold(before[len(before)-6:], "values")
}

func matchParen(s string, i int) int {
	depth := 0
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// fingerprint is one fingerprint's running totals.
type fingerprint struct {
	text  string
	count atomic.Int64
	total atomic.Int64 // nanoseconds
}

func (f *fingerprint) add(d time.Duration) {
	f.count.Add(1)
	f.total.Add(int64(d))
}

// Bounds of the fingerprint tables. Past maxFingerprints distinct
// fingerprints, further ones are totalled under otherFingerprint.
const (
	maxShapes        = 20000
	maxFingerprints  = 10000
	otherFingerprint = "(other statements)"
)

// fingerprints maps shapes to fingerprints and keeps the totals per
// fingerprint, for all connections of a proxy.
type fingerprints struct {
	mu      sync.RWMutex
	byShape map[string]*fingerprint
	byText  map[string]*fingerprint
	other   *fingerprint
}

func newFingerprints() *fingerprints {
	return &fingerprints{
		byShape: make(map[string]*fingerprint),
		byText:  make(map[string]*fingerprint),
	}
}

// lookup returns the fingerprint of a shape, computing it on first use.
func (fs *fingerprints) lookup(shape []byte) *fingerprint {
	fs.mu.RLock()
	fp := fs.byShape[string(shape)]
	fs.mu.RUnlock()
	if fp != nil {
		return fp
	}
	text := fingerprintShape(string(shape))
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fp := fs.byShape[string(shape)]; fp != nil {
		return fp
	}
	fp = fs.byText[text]
	if fp == nil {
		if len(fs.byText) >= maxFingerprints {
			if fs.other == nil {
				fs.other = &fingerprint{text: otherFingerprint}
			}
			fp = fs.other
		} else {
			fp = &fingerprint{text: text}
			fs.byText[text] = fp
		}
	}
	if len(fs.byShape) >= maxShapes {
		clear(fs.byShape)
	}
	fs.byShape[string(shape)] = fp
	return fp
}

// named returns the fingerprint with the given text (for statements whose
// text is unknown).
func (fs *fingerprints) named(text string) *fingerprint {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fp := fs.byText[text]
	if fp == nil {
		if len(fs.byText) >= maxFingerprints {
			if fs.other == nil {
				fs.other = &fingerprint{text: otherFingerprint}
			}
			return fs.other
		}
		fp = &fingerprint{text: text}
		fs.byText[text] = fp
	}
	return fp
}

// all returns every fingerprint with its totals.
func (fs *fingerprints) all() []*fingerprint {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	out := make([]*fingerprint, 0, len(fs.byText)+1)
	for _, fp := range fs.byText {
		out = append(out, fp)
	}
	if fs.other != nil {
		out = append(out, fs.other)
	}
	return out
}
