package sqlcore

import (
	"sync"
	"sync/atomic"
	"time"
)

// Fingerprint is one fingerprint's running totals: statements that
// completed (count, total) and statements the server rejected (errors).
type Fingerprint struct {
	text   string
	count  atomic.Int64
	total  atomic.Int64 // nanoseconds
	errors atomic.Int64
}

// Text returns the fingerprint's text ("" for an empty statement).
func (f *Fingerprint) Text() string { return f.text }

// add counts a statement that took d; failed says the server rejected it.
func (f *Fingerprint) add(d time.Duration, failed bool) {
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
	of      func(shape string) string // the wire's fingerprinter
	mu      sync.RWMutex
	byShape map[string]*Fingerprint
	byText  map[string]*Fingerprint
	other   *Fingerprint
}

func newFingerprints(of func(string) string) *fingerprints {
	return &fingerprints{
		of:      of,
		byShape: make(map[string]*Fingerprint),
		byText:  make(map[string]*Fingerprint),
	}
}

// lookup returns the fingerprint of a shape, computing it on first use.
func (fs *fingerprints) lookup(shape []byte) *Fingerprint {
	fs.mu.RLock()
	fp := fs.byShape[string(shape)]
	fs.mu.RUnlock()
	if fp != nil {
		return fp
	}
	text := fs.of(string(shape))
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fp := fs.byShape[string(shape)]; fp != nil {
		return fp
	}
	fp = fs.byText[text]
	if fp == nil {
		if len(fs.byText) >= maxFingerprints {
			if fs.other == nil {
				fs.other = &Fingerprint{text: otherFingerprint}
			}
			fp = fs.other
		} else {
			fp = &Fingerprint{text: text}
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
func (fs *fingerprints) named(text string) *Fingerprint {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fp := fs.byText[text]
	if fp == nil {
		if len(fs.byText) >= maxFingerprints {
			if fs.other == nil {
				fs.other = &Fingerprint{text: otherFingerprint}
			}
			return fs.other
		}
		fp = &Fingerprint{text: text}
		fs.byText[text] = fp
	}
	return fp
}

// all returns every fingerprint with its totals.
func (fs *fingerprints) all() []*Fingerprint {
	fs.mu.RLock()
	defer fs.mu.RUnlock()
	out := make([]*Fingerprint, 0, len(fs.byText)+1)
	for _, fp := range fs.byText {
		out = append(out, fp)
	}
	if fs.other != nil {
		out = append(out, fs.other)
	}
	return out
}
