package analyzer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// minErrorsChange is the smallest change in rejected statements per request
// that an explanation mentions: one statement in a hundred requests.
const minErrorsChange = 0.01

// ErrorChanges returns the fingerprints of e whose statements the server
// rejected more or less often per request in the candidate than in the
// baseline, the largest change first.
func ErrorChanges(e *EndpointComparison) []FingerprintChange {
	var out []FingerprintChange
	for _, f := range e.SQL {
		if math.Abs(f.ErrorsDelta()) >= minErrorsChange {
			out = append(out, f)
		}
	}
	slices.SortStableFunc(out, func(x, y FingerprintChange) int {
		return cmp.Compare(math.Abs(y.ErrorsDelta()), math.Abs(x.ErrorsDelta()))
	})
	return out
}

// sqlErrorsClause names up to three fingerprints whose statements fail more
// or less often than in the baseline: "`INSERT INTO orders …` fails 3 times
// per request (baseline 0)"; "" when none changed.
func sqlErrorsClause(c *Comparison, e *EndpointComparison) string {
	changes := ErrorChanges(e)
	var parts []string
	for _, f := range changes[:min(3, len(changes))] {
		name := c.StatementName(f.Fingerprint)
		if f.CandidateErrorsPerRequest == 0 {
			parts = append(parts, fmt.Sprintf("`%s` no longer fails (baseline %s times per request)",
				name, FormatCount(f.BaselineErrorsPerRequest)))
			continue
		}
		parts = append(parts, fmt.Sprintf("`%s` fails %s times per request (baseline %s)",
			name, FormatCount(f.CandidateErrorsPerRequest), FormatCount(f.BaselineErrorsPerRequest)))
	}
	return strings.Join(parts, ", ")
}
