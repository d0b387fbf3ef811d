package snapshots

import (
	"errors"
	"fmt"
	"io"
	"net/url"
)

// Rejected is an entry an import skipped, and why. The rest of the file
// is still imported.
type Rejected struct {
	// What is "entry" (an exchange or a JSON Lines record) or "statement"
	// (HAR's "_replay_statements").
	What string
	// N counts What from 1 in the file: JSON Lines records after the
	// header, HAR entries, HAR statements.
	N int
	// Line is the line of a JSON Lines record; zero for HAR.
	Line int
	// Reason says what was wrong, e.g. "status 99999 out of range 100–599".
	Reason string
}

// String names the entry and the reason: "entry 17 (line 18): status
// 99999 out of range 100–599".
func (r *Rejected) String() string {
	if r.Line > 0 {
		return fmt.Sprintf("%s %d (line %d): %s", r.What, r.N, r.Line, r.Reason)
	}
	return fmt.Sprintf("%s %d: %s", r.What, r.N, r.Reason)
}

// RejectLog writes each rejected entry on a line of W, "PREFIX entry 17
// (line 18): status 99999 out of range 100–599; skipped", and counts them
// (N); its Add is an ImportOptions.Rejected. Past Max entries (zero: no
// limit) it only counts; Done then says how many more were skipped.
type RejectLog struct {
	W      io.Writer
	Prefix string
	Max    int
	N      int
}

// Add writes r and counts it.
func (l *RejectLog) Add(r *Rejected) {
	l.N++
	if l.Max == 0 || l.N <= l.Max {
		fmt.Fprintf(l.W, "%s%s; skipped\n", l.Prefix, r)
	}
}

// Done writes, when entries went unnamed past Max, how many: "PREFIX …
// and 190 more entries skipped (200 in all)".
func (l *RejectLog) Done() {
	if l.Max > 0 && l.N > l.Max {
		more := l.N - l.Max
		fmt.Fprintf(l.W, "%s… and %d more %s skipped (%d in all)\n", l.Prefix, more, plural(more, "entry", "entries"), l.N)
	}
}

// ErrNothingImported is wrapped by the imports when a file gave no
// exchange and no statement: every entry was rejected, or there was none.
var ErrNothingImported = errors.New("nothing imported")

// errReject marks an entry's error as one that skips the entry rather than
// ending the import.
type errReject struct{ err error }

func (e errReject) Error() string { return e.err.Error() }
func (e errReject) Unwrap() error { return e.err }

func reject(err error) error {
	if err == nil {
		return nil
	}
	return errReject{err}
}

// checkExchange checks what an imported exchange must hold: a method, a
// URL that parses, a known direction, a status in 100–599 (or 0 with the
// error that stood for the response), no negative duration or size.
func checkExchange(e *Exchange) error {
	switch {
	case e.Method == "":
		return errors.New("no method")
	case !isToken(e.Method):
		return fmt.Errorf("method %q is not an HTTP method", e.Method)
	case e.URL == "":
		return errors.New("no url")
	}
	if _, err := url.Parse(e.URL); err != nil {
		return fmt.Errorf("bad url %q", e.URL)
	}
	if e.Direction != Inbound && e.Direction != Outbound {
		return fmt.Errorf("unknown direction %q (want inbound or outbound)", e.Direction)
	}
	switch {
	case e.Status == 0 && e.Error == "":
		return errors.New("status 0 without an error (a response needs a status in 100–599)")
	case e.Status != 0 && (e.Status < 100 || e.Status > 599):
		return fmt.Errorf("status %d out of range 100–599", e.Status)
	case e.Duration < 0:
		return fmt.Errorf("negative duration %s", e.Duration)
	case e.RequestBodySize < 0:
		return fmt.Errorf("negative request_body_size %d", e.RequestBodySize)
	case e.ResponseBodySize < 0:
		return fmt.Errorf("negative response_body_size %d", e.ResponseBodySize)
	}
	return nil
}

// checkStatement checks what an imported statement must hold.
func checkStatement(s *Statement) error {
	switch {
	case s.Duration < 0:
		return fmt.Errorf("negative duration %s", s.Duration)
	case s.Rows < 0:
		return fmt.Errorf("negative rows %d", s.Rows)
	}
	return nil
}
