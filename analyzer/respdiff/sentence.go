package respdiff

import (
	"fmt"
	"slices"
	"strings"
)

// Sentence says the group in one sentence, e.g.
//
//	`$.id`: number 7 → string "7" in 40 of 40 responses
//	`$.email` dropped (was string "a@example.com") in 40 of 40 responses
//	`$.items` reordered (same 3 items) in 12 of 40 responses
//	status 200 → 500 in 3 of 40 responses
//	header Content-Type "application/json" → "text/html" in 40 of 40 responses
//	body differs by hash in 7 of 900 answers beyond the sample
func (g Group) Sentence() string {
	return g.What() + " in " + g.HowMany()
}

// What is the sentence without its count: what differs and how.
func (g Group) What() string {
	subject := "`" + g.Path + "`"
	switch {
	case g.Path == "status":
		subject = "status"
	case strings.HasPrefix(g.Path, "header:"):
		subject = "header " + strings.TrimPrefix(g.Path, "header:")
	case strings.HasPrefix(g.Path, "line:"):
		subject = "line " + strings.TrimPrefix(g.Path, "line:")
	case g.Path == "body":
		subject = "body"
	}
	switch g.Kind {
	case KindDropped:
		return fmt.Sprintf("%s dropped (was %s)", subject, g.Baseline)
	case KindAdded:
		return fmt.Sprintf("%s added (%s)", subject, g.Candidate)
	case KindReordered:
		return fmt.Sprintf("%s reordered (same %s, another order)", subject, strings.TrimSuffix(strings.TrimPrefix(g.Baseline, "array ("), ")"))
	case KindHash:
		return subject + " differs by hash"
	}
	if strings.HasPrefix(g.Path, "$") {
		return fmt.Sprintf("%s: %s → %s", subject, g.Baseline, g.Candidate)
	}
	return fmt.Sprintf("%s %s → %s", subject, g.Baseline, g.Candidate)
}

// HowMany is "40 of 40 responses", or for answers compared by hash "7 of
// 900 answers beyond the sample".
func (g Group) HowMany() string {
	if g.Hashed {
		return fmt.Sprintf("%d of %d answers beyond the sample", g.Count, g.Of)
	}
	return fmt.Sprintf("%d of %d responses", g.Count, g.Of)
}

// Sentence says the endpoint's differences in one sentence: the largest
// group's, then how many other groups and their paths (at most three);
// "" without differences.
func (s *Summary) Sentence() string {
	if s == nil || len(s.Differences) == 0 {
		return ""
	}
	out := s.Differences[0].Sentence()
	if rest := s.Differences[1:]; len(rest) > 0 {
		var paths []string
		for i, g := range rest {
			if i == 3 {
				paths = append(paths, "…")
				break
			}
			if p := "`" + g.Path + "`"; !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
		word := "difference"
		if len(rest) > 1 {
			word += "s"
		}
		out += fmt.Sprintf("; %d more %s (%s)", len(rest), word, strings.Join(paths, ", "))
	}
	return out
}
