package snapshots

import (
	"errors"
	"fmt"
)

// sink receives what an import decodes; *Writer is one, tests use others.
type sink interface {
	AddExchange(e *Exchange)
	AddStatement(s *Statement)
}

var _ sink = (*Writer)(nil)

// importer turns decoded records into Exchanges and Statements for a sink,
// checking what a file cannot be trusted with.
type importer struct {
	to    sink
	rules []Rule // the user's rules, which override recorded endpoints
	// direction is given to foreign HAR entries; empty means Inbound.
	direction Direction

	// rejected is called for each entry skipped; nil ignores them.
	rejected func(*Rejected)

	header             *fileHeader
	inbound, outbound  int64
	statements         int64
	rejects            int
	firstReject        string
	exchanges, stmtIDs map[int64]bool
}

func newImporter(to sink, rules []Rule) *importer {
	return &importer{to: to, rules: rules, exchanges: map[int64]bool{}, stmtIDs: map[int64]bool{}}
}

var errDuplicate = errors.New("duplicate id")

func (im *importer) exchange(e *Exchange) error {
	if err := checkExchange(e); err != nil {
		return reject(err)
	}
	if e.ID != 0 {
		if im.exchanges[e.ID] {
			return reject(errDuplicate)
		}
		im.exchanges[e.ID] = true
	}
	e.Endpoint = importEndpoint(e, im.rules)
	if e.Direction == Outbound {
		im.outbound++
	} else {
		im.inbound++
	}
	im.to.AddExchange(e)
	return nil
}

func (im *importer) statement(s *Statement) error {
	if err := checkStatement(s); err != nil {
		return reject(err)
	}
	if s.ID != 0 {
		if im.stmtIDs[s.ID] {
			return reject(errDuplicate)
		}
		im.stmtIDs[s.ID] = true
	}
	im.statements++
	im.to.AddStatement(s)
	return nil
}

// entry handles err, the outcome of one entry: an error that rejects the
// entry is reported and skipped (nil returned); any other ends the import.
func (im *importer) entry(what string, n, line int, err error) error {
	var re errReject
	if !errors.As(err, &re) {
		return err
	}
	r := &Rejected{What: what, N: n, Line: line, Reason: err.Error()}
	im.rejects++
	if im.firstReject == "" {
		im.firstReject = r.String()
	}
	if im.rejected != nil {
		im.rejected(r)
	}
	return nil
}

// done returns ErrNothingImported, saying why, when no exchange and no
// statement was imported.
func (im *importer) done() error {
	if im.inbound+im.outbound+im.statements > 0 {
		return nil
	}
	if im.rejects == 0 {
		return fmt.Errorf("%w: the file holds no exchange or statement", ErrNothingImported)
	}
	return fmt.Errorf("%w: %d %s rejected (the first: %s)", ErrNothingImported, im.rejects, plural(im.rejects, "entry", "entries"), im.firstReject)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// finish carries the file's capture statistics and rules over to w: the
// requests seen are those the file says were seen, or else those imported.
func (im *importer) finish(w *Writer) {
	in, out := im.inbound, im.outbound
	if h := im.header; h != nil && h.Capture != nil {
		in, out = max(in, h.Capture.InboundSeen), max(out, h.Capture.OutboundSeen)
	}
	w.addSeen(Inbound, in)
	w.addSeen(Outbound, out)
	if im.header != nil && len(w.rules) == 0 {
		var rules []Rule
		for _, s := range im.header.Rules {
			if r, err := ParseRule(s); err == nil {
				rules = append(rules, r)
			}
		}
		w.storeRules(rules)
	}
}

// ruleStrings formats rules for a file header.
func ruleStrings(rules []Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}

// importEndpoint returns the endpoint of an imported exchange: the recorded
// one, unless the user's rules give another. A template that matches
// replaces it; for an inbound exchange, so does a body rule that finds a
// value, and an operation (GraphQL) is added to a recorded endpoint that
// has none, as recording would now compute it. An empty endpoint stays
// empty: the writer computes it.
func importEndpoint(e *Exchange, rules []Rule) string {
	if ep, ok := matchRules(e.Method, e.URL, rules); ok {
		if e.Direction != Outbound {
			if op := Operation(e.Method, e.URL, e.RequestBody, rules); op != "" {
				ep += " {" + op + "}"
			}
		}
		return ep
	}
	if e.Endpoint == "" || e.Direction == Outbound {
		return e.Endpoint
	}
	base, recorded := SplitEndpoint(e.Endpoint)
	if recorded != "" && !hasBodyRules(rules) {
		return e.Endpoint
	}
	if op := Operation(e.Method, e.URL, e.RequestBody, rules); op != "" {
		return base + " {" + op + "}"
	}
	return e.Endpoint
}

func hasBodyRules(rules []Rule) bool {
	for _, r := range rules {
		if r.IsBodyRule() {
			return true
		}
	}
	return false
}
