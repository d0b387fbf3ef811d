package report

import (
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/replaykit/replay/analyzer"
	"github.com/replaykit/replay/analyzer/respdiff"
)

// ResponsesDocument compares the answers to one endpoint's requests
// (analyzer.EndpointComparison.Responses, or a build's against the
// recording in a run report).
type ResponsesDocument struct {
	// Verdict is regression when an answer differs beyond the noise and
	// the rules, else unchanged.
	Verdict analyzer.Verdict `json:"verdict"`
	// Compared counts the answers compared: sampled (field by field) and
	// hashed (beyond the sample, by body hash).
	Compared int64 `json:"compared"`
	Sampled  int64 `json:"sampled"`
	Hashed   int64 `json:"hashed"`
	// HashedOneIn, above 1, says the hashed answers were those to 1 in
	// that many of the exchanges (a run too long to keep every count).
	HashedOneIn int64 `json:"hashed_one_in,omitempty"`
	Differing   int64 `json:"differing"`
	// Differences group the differences by path, most answers first.
	Differences []ResponseDifferenceDocument `json:"differences"`
	// Ignored lists what was ignored and why (learned noise, rules).
	Ignored []respdiff.Ignored `json:"ignored"`
	// Accepted groups the differences --accept-diff names; absent when
	// none.
	Accepted []ResponseDifferenceDocument `json:"accepted,omitempty"`
}

// ResponseDifferenceDocument is a group of differences at one path.
type ResponseDifferenceDocument struct {
	Path      string `json:"path"`
	Kind      string `json:"kind"`
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	Count     int64  `json:"count"`
	Of        int64  `json:"of"`
	// Sentence says it in one line: "`$.id`: number 7 → string "7" in 40
	// of 40 responses".
	Sentence string           `json:"sentence"`
	Example  respdiff.Example `json:"example"`
}

// responsesDoc is the document of s; nil without s.
func responsesDoc(s *respdiff.Summary) *ResponsesDocument {
	if s == nil {
		return nil
	}
	d := &ResponsesDocument{Verdict: analyzer.Unchanged, Compared: s.Compared, Sampled: s.Sampled, Hashed: s.Hashed, HashedOneIn: s.HashedOneIn, Differing: s.Differing,
		Differences: groupDocs(s.Differences), Ignored: append([]respdiff.Ignored{}, s.Ignored...)}
	if s.Differing > 0 {
		d.Verdict = analyzer.Regression
	}
	if len(s.Accepted) > 0 {
		d.Accepted = groupDocs(s.Accepted)
	}
	return d
}

func groupDocs(gs []respdiff.Group) []ResponseDifferenceDocument {
	out := []ResponseDifferenceDocument{}
	for _, g := range gs {
		out = append(out, ResponseDifferenceDocument{Path: g.Path, Kind: g.Kind, Baseline: g.Baseline, Candidate: g.Candidate,
			Count: g.Count, Of: g.Of, Sentence: g.Sentence(), Example: g.Example})
	}
	return out
}

// endpointResponses is an endpoint's comparison of answers, for the
// renderers.
type endpointResponses struct {
	endpoint string
	s        *respdiff.Summary
}

// comparedResponses lists the endpoints whose answers were compared,
// in the comparison's order.
func comparedResponses(c *analyzer.Comparison) []endpointResponses {
	var out []endpointResponses
	for _, e := range c.Endpoints {
		if e.Responses != nil {
			out = append(out, endpointResponses{e.Endpoint, e.Responses})
		}
	}
	return out
}

// ignoredLine says what an endpoint ignored, paths grouped by reason:
// "`$.at`, `$.uuid` (varies between the baseline's answers to the same
// request)"; "" when nothing.
func ignoredLine(s *respdiff.Summary, q quoter) string {
	var reasons []string
	paths := map[string][]string{}
	for _, ig := range s.Ignored {
		if _, ok := paths[ig.Reason]; !ok {
			reasons = append(reasons, ig.Reason)
		}
		paths[ig.Reason] = append(paths[ig.Reason], q(ig.Path))
	}
	var parts []string
	for _, r := range reasons {
		parts = append(parts, strings.Join(paths[r], ", ")+" ("+r+")")
	}
	return strings.Join(parts, "; ")
}

// hashSampleNote says that beyond the sample only some exchanges' answers
// were compared by hash; "" when all were.
func hashSampleNote(rs []endpointResponses) string {
	var n int64
	for _, r := range rs {
		n = max(n, r.s.HashedOneIn)
	}
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("Beyond the sample, the answers to 1 in %s of the exchanges (chosen alike on both sides) were compared by hash: a run this long keeps at most %s counts.",
		count(n), count(respdiff.MaxHashedRows))
}

// responseLabels name what a comparison of answers compared.
type responseLabels struct {
	title   string // heads the section
	example string // says which side an example diff's lines are from
}

var (
	buildLabels     = responseLabels{"Responses (the same requests' answers, field by field, and beyond the sample by hash)", "- baseline, + candidate"}
	recordingLabels = responseLabels{"Responses compared with the recording (field by field, and beyond the sample by hash)", "- recording, + build"}
)

// writeResponsesText writes the comparison of answers: a table, then per
// endpoint its differences, accepted ones and what it ignored.
func writeResponsesText(e *errWriter, rs []endpointResponses, l responseLabels) {
	if len(rs) == 0 {
		return
	}
	e.println("")
	e.println(l.title)
	t := newTable([]string{"ENDPOINT", "COMPARED", "DIFFERING", "IGNORED"}, 1, 2, 3)
	for _, r := range rs {
		t.add(r.endpoint, count(r.s.Compared), count(r.s.Differing), count(int64(len(r.s.Ignored))))
	}
	t.write(e, "  ")
	for _, r := range rs {
		for _, g := range r.s.Differences {
			e.printf("  %s: %s (e.g. exchange %d)\n", r.endpoint, g.Sentence(), g.Example.ExchangeID)
		}
		for _, g := range r.s.Accepted {
			e.printf("  %s: accepted: %s\n", r.endpoint, g.Sentence())
		}
		if line := ignoredLine(r.s, backticks); line != "" {
			e.printf("  %s: ignored %s\n", r.endpoint, line)
		}
	}
	if note := hashSampleNote(rs); note != "" {
		e.println("  " + note)
	}
}

// writeResponsesMarkdown writes the comparison of answers: a table, the
// differences, and the first example diff of each endpoint collapsed.
func writeResponsesMarkdown(e *errWriter, rs []endpointResponses, l responseLabels) {
	if len(rs) == 0 {
		return
	}
	title, rest, _ := strings.Cut(l.title, " ")
	e.println("")
	e.println("**" + title + "** " + rest + ":")
	e.println("")
	e.println("| Endpoint | Compared | Differing | Differences |")
	e.println("|---|---:|---:|---|")
	for _, r := range rs {
		var ds []string
		for _, g := range r.s.Differences {
			ds = append(ds, g.Sentence())
		}
		for _, g := range r.s.Accepted {
			ds = append(ds, "accepted: "+g.Sentence())
		}
		if len(ds) == 0 {
			ds = []string{"none"}
		}
		e.printf("| %s | %s | %s | %s |\n", cell(r.endpoint), count(r.s.Compared), count(r.s.Differing), cell(strings.Join(ds, "<br>")))
	}
	for _, r := range rs {
		if ex := firstExample(r.s); ex != nil {
			e.println("")
			e.printf("<details><summary>Example: %s, exchange %d (%s)</summary>\n\n", r.endpoint, ex.ExchangeID, l.example)
			e.println("```diff")
			e.printf("%s", ex.Diff)
			e.println("```")
			e.println("")
			e.println("</details>")
		}
	}
	var ignored []string
	for _, r := range rs {
		if line := ignoredLine(r.s, backticks); line != "" {
			ignored = append(ignored, "<sub>"+r.endpoint+" ignored "+line+".</sub><br>")
		}
	}
	if note := hashSampleNote(rs); note != "" {
		ignored = append(ignored, "<sub>"+note+"</sub><br>")
	}
	if len(ignored) > 0 {
		e.println("")
		for _, l := range ignored {
			e.println(l)
		}
	}
}

// firstExample is the first difference's example with a diff to show.
func firstExample(s *respdiff.Summary) *respdiff.Example {
	for _, g := range s.Differences {
		if g.Example.Diff != "" {
			return &g.Example
		}
	}
	return nil
}

// htmlResponses are the rows of the HTML page's responses table.
func htmlResponses(rs []endpointResponses) []map[string]any {
	var out []map[string]any
	for _, r := range rs {
		var ds []string
		for _, g := range r.s.Differences {
			ds = append(ds, g.Sentence())
		}
		for _, g := range r.s.Accepted {
			ds = append(ds, "accepted: "+g.Sentence())
		}
		row := map[string]any{"Endpoint": r.endpoint, "Compared": count(r.s.Compared), "Differing": count(r.s.Differing),
			"Differences": ds, "Ignored": ignoredLine(r.s, plain)}
		if ex := firstExample(r.s); ex != nil {
			row["Example"] = fmt.Sprintf("exchange %d", ex.ExchangeID)
			row["Diff"] = template.HTML(diffHTML(ex.Diff))
		}
		out = append(out, row)
	}
	return out
}

// diffHTML renders an example diff with its removed and added lines
// marked.
func diffHTML(diff string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(diff, "\n") {
		esc := template.HTMLEscapeString(line)
		switch {
		case strings.HasPrefix(line, "- "):
			b.WriteString(`<span class="del">` + esc + `</span>`)
		case strings.HasPrefix(line, "+ "):
			b.WriteString(`<span class="add">` + esc + `</span>`)
		default:
			b.WriteString(esc)
		}
	}
	return b.String()
}

// responsesHTML is the responses section of the comparison page.
const responsesHTML = `{{define "responses"}}{{if .Responses}}<h2>Responses</h2>
<table><tr><th>Endpoint</th><th class="n">Compared</th><th class="n">Differing</th><th>Differences</th></tr>
{{range .Responses}}<tr><td>{{.Endpoint}}</td><td class="n">{{.Compared}}</td><td class="n">{{.Differing}}</td><td>{{range .Differences}}{{code .}}<br>{{else}}none{{end}}
{{if .Diff}}<details><summary>Example: {{.Example}}</summary><pre class="diff">{{.Diff}}</pre></details>{{end}}
{{if .Ignored}}<small>Ignored: {{.Ignored}}</small>{{end}}</td></tr>
{{end}}</table>{{end}}{{end}}`

// behaviourNext says what to do about an endpoint whose answers changed.
func behaviourNext(e *analyzer.EndpointComparison, q quoter) string {
	var paths []string
	for _, g := range e.Responses.Differences {
		if !slices.Contains(paths, g.Path) {
			paths = append(paths, g.Path)
		}
	}
	quoted, accept := make([]string, len(paths)), make([]string, len(paths))
	for i, p := range paths {
		quoted[i], accept[i] = q(p), q("--accept-diff '"+p+"'")
	}
	return fmt.Sprintf("Check the answers of %s (%s): fix the candidate if the change is a bug; if it is intended, accept it (%s); if it is noise, --ignore the path.",
		e.Endpoint, strings.Join(quoted, ", "), strings.Join(accept, " "))
}

// responseExample is the example diff of an endpoint whose answers
// changed, for a JUnit failure: "example: exchange 3 (- baseline, +
// candidate)" and the diff; "" without one.
func responseExample(e *analyzer.EndpointComparison) string {
	if e.ResponseVerdict != analyzer.Regression {
		return ""
	}
	ex := firstExample(e.Responses)
	if ex == nil {
		return ""
	}
	return fmt.Sprintf("example: exchange %d (- baseline, + candidate)\n%s", ex.ExchangeID, ex.Diff)
}
