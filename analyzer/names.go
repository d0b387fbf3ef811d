package analyzer

import (
	"slices"
	"strings"
)

// StatementNames names each of the fingerprints fps for a sentence, in
// about width bytes, so that no two share a name: a fingerprint that fits
// is its own name; a longer one is shortened as ShortFingerprint does when
// that keeps it apart from the others, and else keeps its head and the
// part where it differs from the fingerprint closest to it, the middle
// elided ("SELECT … FROM books … WHERE author_id = ?"). Report the full
// fingerprint where there is room (JSON, Markdown and HTML details).
func StatementNames(fps []string, width int) map[string]string {
	texts := make([]string, 0, len(fps))
	full := map[string]string{}
	for _, fp := range fps {
		t := strings.Join(strings.Fields(fp), " ")
		if _, ok := full[fp]; !ok {
			full[fp] = t
			texts = append(texts, t)
		}
	}
	slices.Sort(texts)
	texts = slices.Compact(texts)

	// The select list elided, unless two fingerprints differ only there.
	elided := map[string]string{}
	count := map[string]int{}
	for _, t := range texts {
		e := elideSelectList(t, width)
		elided[t] = e
		count[e]++
	}
	forms := make([]string, 0, len(texts))
	form := map[string]string{}
	for _, t := range texts {
		f := elided[t]
		if count[f] > 1 {
			f = t
		}
		form[t] = f
		forms = append(forms, f)
	}
	slices.Sort(forms)
	forms = slices.Compact(forms)

	names := make(map[string]string, len(fps))
	for fp, t := range full {
		names[fp] = withTables(nameApart(form[t], forms, width), t)
	}
	return names
}

// withTables adds to a name cut short that shows none of the tables the
// statement t reads or writes those tables ("… on books"), so that a long
// statement (an ORM's CTE) still says which tables it touches.
func withTables(name, t string) string {
	if !strings.HasSuffix(name, "…") {
		return name
	}
	tables := tablesOf(t)
	for _, tab := range tables {
		if strings.Contains(name, tab) {
			return name // it shows where it reads
		}
	}
	if len(tables) == 0 {
		return name
	}
	return name + " on " + strings.Join(tables, ", ")
}

// tablesOf lists, in order and at most three, the names that follow FROM,
// JOIN, INTO and UPDATE in t, subqueries and functions left out.
func tablesOf(t string) []string {
	var out []string
	words := strings.Fields(t)
	for i := 0; i+1 < len(words) && len(out) < 3; i++ {
		switch strings.ToUpper(words[i]) {
		case "FROM", "JOIN", "INTO", "UPDATE":
		default:
			continue
		}
		w := strings.TrimRight(words[i+1], ",;)")
		if w == "" || strings.ContainsAny(w, "(?") || strings.HasPrefix(strings.ToLower(w), "__") || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

// elideSelectList replaces the select list of a SELECT longer than width
// by "…".
func elideSelectList(s string, width int) string {
	if len(s) <= width || !strings.HasPrefix(strings.ToUpper(s), "SELECT ") {
		return s
	}
	if i := topLevelFrom(s); i > len("SELECT") {
		return "SELECT …" + s[i:]
	}
	return s
}

// nameApart names s, one of forms (sorted, distinct), in about width
// bytes, apart from the other forms.
func nameApart(s string, forms []string, width int) string {
	if len(s) <= width {
		return s
	}
	// d: how much of s the closest other form shares; in sorted order,
	// a neighbour.
	d := 0
	if i, ok := slices.BinarySearch(forms, s); ok {
		if i > 0 {
			d = commonPrefix(s, forms[i-1])
		}
		if i+1 < len(forms) {
			d = max(d, commonPrefix(s, forms[i+1]))
		}
	}
	limit := max(width-len("…"), 1)
	if d < limit {
		return cutAfter(s, limit, d)
	}
	// Keep the head (up to the table after FROM, else the first word) and
	// from the start of the clause where s differs.
	head := headOf(s)
	start := clauseStart(s, d, len(head))
	name := head + " …" + s[start:]
	return cutAfter(name, limit, len(head)+len(" …")+(d-start))
}

// cutAfter cuts s to about n bytes at a word boundary, marked with "…",
// keeping the word that holds byte d whole even past n.
func cutAfter(s string, n, d int) string {
	if len(s) <= n+len("…") {
		return s
	}
	end := d
	for end < len(s) && !strings.ContainsRune(" ,)", rune(s[end])) {
		end++
	}
	if end >= len(s) {
		return s
	}
	if end >= n {
		return s[:end] + "…"
	}
	if i := strings.LastIndexByte(s[:n+1], ' '); i >= end {
		return s[:i] + "…"
	}
	return s[:end] + "…"
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// headOf returns the start of s that says what a statement is about: up to
// the first table after the top-level FROM ("SELECT … FROM books"), else
// its first two words.
func headOf(s string) string {
	if i := topLevelFrom(s); i > 0 {
		j := i + len(" FROM ")
		for j < len(s) && s[j] != ' ' {
			j++
		}
		return s[:j]
	}
	words := strings.SplitN(s, " ", 3)
	return strings.Join(words[:min(2, len(words))], " ")
}

// maxClauseLead bounds how far before the first byte that differs a name
// may start its clause; further, it starts at that byte's word.
const maxClauseLead = 60

// clauseKeywords start the clauses a name may be shown from.
var clauseKeywords = []string{" WHERE ", " AND ", " OR ", " ON ", " JOIN ", " SET ", " VALUES ", " ORDER BY ", " GROUP BY ", " HAVING ", " LIMIT ", " RETURNING "}

// clauseStart returns where the clause of s holding byte d starts (the space
// before its keyword), not before from; else the space before d's word.
func clauseStart(s string, d, from int) int {
	best := -1
	upper := strings.ToUpper(s[:min(d+1, len(s))])
	for _, k := range clauseKeywords {
		if i := strings.LastIndex(upper, k); i >= from && i > best {
			best = i
		}
	}
	if best >= 0 && d-best <= maxClauseLead {
		return best
	}
	if i := strings.LastIndexByte(s[:d], ' '); i >= from {
		return i
	}
	return min(from, len(s))
}
