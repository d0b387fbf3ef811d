package sqlcount

import (
	"sync"
	"sync/atomic"
	"time"
)

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

// fingerprint is one fingerprint's running totals: statements that
// completed (count, total) and statements the server rejected (errors).
type fingerprint struct {
	text   string
	count  atomic.Int64
	total  atomic.Int64 // nanoseconds
	errors atomic.Int64
}

// add counts a statement that took d; failed says the server rejected it.
func (f *fingerprint) add(d time.Duration, failed bool) {
	if failed {
		f.errors.Add(1)
		return
	}
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
