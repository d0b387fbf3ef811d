package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html"
	"io"
	"slices"
	"strings"

	"github.com/replaykit/replay/analyzer"
)

// MarkdownLimit is the most bytes a Markdown report takes: under the
// 65,536 characters of a GitHub comment or step summary. A longer report
// is cut, endpoints last in its order first, with a note saying so.
const MarkdownLimit = 60 * 1024

// fitMarkdown writes the Markdown render makes of all n endpoints when it
// fits MarkdownLimit, else of as many as fit (render is told how many to
// show; it notes the cut).
func fitMarkdown(w io.Writer, n int, render func(w io.Writer, shown int) error) error {
	var b bytes.Buffer
	if err := render(&b, n); err != nil {
		return err
	}
	if b.Len() <= MarkdownLimit {
		_, err := w.Write(b.Bytes())
		return err
	}
	lo, hi := 0, n-1 // the largest count that fits, by bisection
	for lo < hi {
		mid := (lo + hi + 1) / 2
		b.Reset()
		if render(&b, mid); b.Len() <= MarkdownLimit {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	b.Reset()
	if err := render(&b, lo); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// writeCutNote says that a Markdown report shows shown of n endpoints.
func writeCutNote(e *errWriter, shown, n int, order string) {
	if shown < n {
		e.printf("\n<sub>⚠️ Cut to stay under %d KB, the size a pull-request comment allows: %d of %d endpoints shown (%s); the text, JSON and HTML reports have them all.</sub>\n",
			MarkdownLimit/1024, shown, n, order)
	}
}

// RunMarkdown writes a run report as Markdown with a "### Result" block
// (Ran, Outcome, Numbers, Artifacts, Next), fit for a pull-request comment,
// a CI step summary and an agent; at most MarkdownLimit bytes.
func RunMarkdown(w io.Writer, r *RunReport) error {
	return fitMarkdown(w, len(r.Summary.Endpoints), func(w io.Writer, shown int) error { return runMarkdown(w, r, shown) })
}

func runMarkdown(w io.Writer, r *RunReport, shown int) error {
	e := &errWriter{w: w}
	s := r.Summary
	e.println("### Result")
	e.println("")
	e.println("**Ran:** " + runRan(s, backticks) + ".")
	e.println("")
	e.println("**Outcome:** " + runOutcome(r, backticks))
	e.println("")
	writeFaultsMarkdown(e, r.Faults(), "run again")
	e.println("**Numbers:**")
	e.println("")
	e.println("| Endpoint | Requests | Failed | Avg ms | p95 ms | p99 ms | SQL/req |")
	e.println("|---|---:|---:|---:|---:|---:|---:|")
	row := func(name string, x *analyzer.EndpointSummary) {
		e.printf("| %s | %s | %s | %s | %s | %s | %s |\n", cell(name), count(x.Requests), count(x.Failed),
			latNum(x.Latency, x.Latency.Avg), latNum(x.Latency, x.Latency.P95), latNum(x.Latency, x.Latency.P99), perRequest(&x.SQL))
	}
	for _, x := range s.Endpoints[:shown] {
		row(x.Endpoint, x)
	}
	if len(s.Endpoints) != 1 {
		row("**all**", s.Overall)
	}
	writeCutNote(e, shown, len(s.Endpoints), "in the run's order")
	writeResponsesMarkdown(e, firstResponses(checkedResponses(r.Responses), s.Endpoints[:shown]), recordingLabels)
	cut := *s
	cut.Endpoints = s.Endpoints[:shown]
	writeUpstreamRunMarkdown(e, &cut)
	writeGoalsMarkdown(e, "Goal", r.Goals)
	writeFailuresMarkdown(e, r)
	e.println("")
	for _, n := range runNotes(s) {
		e.println("<sub>" + n + "</sub><br>")
	}
	writeArtifacts(e, r.Artifacts)
	writeNext(e, runNext(r, backticks))
	return e.err
}

// firstResponses keeps the responses of the endpoints shown.
func firstResponses(rs []endpointResponses, shown []*analyzer.EndpointSummary) []endpointResponses {
	return slices.DeleteFunc(rs, func(r endpointResponses) bool {
		return !slices.ContainsFunc(shown, func(x *analyzer.EndpointSummary) bool { return x.Endpoint == r.endpoint })
	})
}

// ComparisonMarkdown writes a comparison as Markdown with a "### Result"
// block: Ran (what was compared), Outcome (the verdict in one line),
// Numbers (a table of the endpoints whose verdict is not unchanged, the
// unchanged ones in one collapsed line, and the explanations), Artifacts
// and Next; at most MarkdownLimit bytes, the changed endpoints kept first.
func ComparisonMarkdown(w io.Writer, r *ComparisonReport) error {
	ordered := slices.Clone(r.Comparison.Endpoints)
	slices.SortStableFunc(ordered, func(a, b *analyzer.EndpointComparison) int {
		return cmp.Compare(bool2int(a.Verdict == analyzer.Unchanged), bool2int(b.Verdict == analyzer.Unchanged))
	})
	return fitMarkdown(w, len(ordered), func(w io.Writer, shown int) error { return comparisonMarkdown(w, r, ordered, shown) })
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// comparisonMarkdown writes the Markdown of r with the first shown of
// ordered, its endpoints changed first.
func comparisonMarkdown(w io.Writer, r *ComparisonReport, ordered []*analyzer.EndpointComparison, shown int) error {
	e := &errWriter{w: w}
	c := r.Comparison
	e.println("### Result")
	e.println("")
	e.println("**Ran:** " + comparisonRan(c, backticks) + ".")
	e.println("")
	e.println("**Outcome:** " + comparisonOutcome(r, backticks))
	e.println("")
	writeFaultsMarkdown(e, c.Faults, "compare again")
	e.println("**Numbers:**")
	e.println("")
	cut := *c
	cut.Endpoints = ordered[:shown]
	var unchanged []string
	header := false
	for _, x := range cut.Endpoints {
		if x.Verdict == analyzer.Unchanged {
			unchanged = append(unchanged, html.EscapeString(x.Endpoint))
			continue
		}
		if !header {
			e.println("| Endpoint | Requests | p95 ms | p99 ms | SQL/req | Verdict |")
			e.println("|---|---:|---:|---:|---:|---|")
			header = true
		}
		e.printf("| %s | %s → %s | %s | %s | %s → %s | %s |\n", cell(x.Endpoint),
			count(x.Baseline.Requests), count(x.Candidate.Requests),
			latChange(x, x.P95, mdChange), latChange(x, x.P99, mdChange),
			perRequest(&x.Baseline.SQL), perRequest(&x.Candidate.SQL),
			verdictBadge(x.Verdict))
	}
	if n := c.Counts[analyzer.Unchanged]; n > 0 {
		if header {
			e.println("")
		}
		if hidden := n - len(unchanged); hidden > 0 {
			unchanged = append(unchanged, fmt.Sprintf("and %d more", hidden))
		}
		e.printf("<details><summary>%s unchanged</summary>%s</details>\n", plural(n, "endpoint"), strings.Join(unchanged, " · "))
	}
	writeCutNote(e, shown, len(ordered), "the changed ones first")
	e.println("")
	for _, x := range cut.Endpoints {
		if x.Verdict != analyzer.Unchanged {
			e.printf("- **%s** (%s): %s\n", x.Endpoint, x.Verdict, x.Explanation)
		}
	}
	if cpuShown(c) {
		e.println("- " + cpuSentence(c))
	}
	writeSQLDetails(e, "SQL statements per request that changed", changedSQL(&cut), func(f analyzer.FingerprintChange) (float64, float64) {
		return f.BaselinePerRequest, f.CandidatePerRequest
	})
	writeSQLErrorsMarkdown(e, &cut)
	writeResponsesMarkdown(e, comparedResponses(&cut), buildLabels)
	writeUpstreamMarkdown(e, &cut)
	writeGoalsMarkdown(e, "Goal (candidate)", r.Goals)
	e.println("")
	for _, n := range c.Notes {
		e.println("<sub>Note: " + n + "</sub><br>")
	}
	e.printf("<sub>A latency change counts when the %s%% bootstrap interval of the candidate/baseline ratio (%s) excludes 1, the sides' distribution-free intervals do not overlap, and it is at least %s and %s%%.</sub>\n",
		analyzer.FormatCount(100*c.Options.Confidence), method(c), analyzer.FormatMs(durMs(c.Options.MinChange)), analyzer.FormatCount(100*minRelative(c)))
	writeArtifacts(e, r.Artifacts)
	writeNext(e, comparisonNext(r, backticks))
	return e.err
}

func minRelative(c *analyzer.Comparison) float64 {
	if c.Method == analyzer.MethodPairedSlices {
		return c.Options.MinRelative
	}
	return max(c.Options.MinRelative, c.Options.MinRelativeSequential)
}

func method(c *analyzer.Comparison) string {
	if c.Method == analyzer.MethodPairedSlices && len(c.SetAside) > 0 {
		return fmt.Sprintf("%d of %d slice pairs resampled together, %d set aside", c.SlicePairs-len(c.SetAside), c.SlicePairs, len(c.SetAside))
	}
	if c.Method == analyzer.MethodPairedSlices {
		return fmt.Sprintf("%d slice pairs resampled together", c.SlicePairs)
	}
	return "each run resampled on its own"
}

type endpointSQL struct {
	endpoint string
	f        analyzer.FingerprintChange
}

// changedSQL lists fingerprints whose statements per request changed by at
// least half a statement.
func changedSQL(c *analyzer.Comparison) []endpointSQL {
	var out []endpointSQL
	for _, e := range c.Endpoints {
		for _, f := range e.SQL {
			if d := f.Delta(); d >= 0.5 || d <= -0.5 {
				out = append(out, endpointSQL{e.Endpoint, f})
			}
		}
	}
	return out
}

// writeSQLErrorsMarkdown lists the statements the server rejected more or
// less often per request than in the baseline, in full.
func writeSQLErrorsMarkdown(e *errWriter, c *analyzer.Comparison) {
	var rows []endpointSQL
	for _, x := range c.Endpoints {
		for _, f := range analyzer.ErrorChanges(x) {
			rows = append(rows, endpointSQL{x.Endpoint, f})
		}
	}
	writeSQLDetails(e, "SQL statements the server rejected, per request, that changed", rows, func(f analyzer.FingerprintChange) (float64, float64) {
		return f.BaselineErrorsPerRequest, f.CandidateErrorsPerRequest
	})
}

// writeSQLDetails writes a collapsed table of statements per endpoint with
// a baseline and a candidate figure each (value); nothing without rows.
func writeSQLDetails(e *errWriter, title string, rows []endpointSQL, value func(analyzer.FingerprintChange) (float64, float64)) {
	cells := make([][]string, len(rows))
	for i, s := range rows {
		b, c := value(s.f)
		cells[i] = []string{cell(s.endpoint), cell(backticks(s.f.Fingerprint)), analyzer.FormatCount(b), analyzer.FormatCount(c)}
	}
	writeDetailsTable(e, title, []string{"Endpoint", "Statement", "Baseline", "Candidate"}, cells)
}

// writeDetailsTable writes a collapsed Markdown table under title, its
// first two columns left-aligned and the others (figures) right-aligned;
// nothing without rows. Cells are written as they are.
func writeDetailsTable(e *errWriter, title string, head []string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	e.println("")
	e.println("<details><summary>" + title + "</summary>")
	e.println("")
	e.println("| " + strings.Join(head, " | ") + " |")
	align := make([]string, len(head))
	for i := range align {
		align[i] = "---:"
		if i < 2 {
			align[i] = "---"
		}
	}
	e.println("|" + strings.Join(align, "|") + "|")
	for _, r := range rows {
		e.println("| " + strings.Join(r, " | ") + " |")
	}
	e.println("")
	e.println("</details>")
}

func writeArtifacts(e *errWriter, as []Artifact) {
	e.println("")
	if len(as) == 0 {
		e.println("**Artifacts:** none written.")
		return
	}
	e.println("**Artifacts:**")
	e.println("")
	for _, a := range as {
		e.printf("- %s: %s\n", a.Name, backticks(a.Path))
	}
}

func writeNext(e *errWriter, next []string) {
	e.println("")
	if len(next) == 1 {
		e.println("**Next:** " + next[0])
		return
	}
	e.println("**Next:**")
	e.println("")
	for _, n := range next {
		e.println("- " + n)
	}
}

// mdChange formats a percentile for the Markdown table: "4.1 → 54.3
// (+50.2, ×13.2)".
func mdChange(ch analyzer.Change) string {
	if ch.Baseline == 0 && ch.Candidate == 0 {
		return "-"
	}
	return fmt.Sprintf("%s → %s (%s)", num(ch.Baseline), num(ch.Candidate), strings.Replace(change(ch), " ms ", ", ", 1))
}

func verdictBadge(v analyzer.Verdict) string {
	switch v {
	case analyzer.Regression:
		return "❌ regression"
	case analyzer.Improvement:
		return "✅ improvement"
	case analyzer.Inconclusive:
		return "⚠️ inconclusive"
	}
	return "unchanged"
}

// cell escapes a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// writeGoalsMarkdown writes the goals, if any, as a table whose first column
// is headed first.
func writeGoalsMarkdown(e *errWriter, first string, goals []analyzer.GoalResult) {
	if len(goals) == 0 {
		return
	}
	e.println("")
	e.println("| " + first + " | Expected | Actual | Result |")
	e.println("|---|---|---:|---|")
	for _, g := range goals {
		res := "✅ pass"
		if g.NotEvaluated {
			res = "⚠️ not evaluated: " + g.Reason
		} else if !g.Passed {
			res = "❌ fail"
			if g.Reason != "" {
				res += ": " + g.Reason
			}
		}
		e.printf("| %s | %s | %s | %s |\n", cell(backticks(g.Goal)), cell(g.Expected), actual(g), cell(res))
	}
}
