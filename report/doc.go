// Package report renders what package analyzer computed: a run's summary
// with its goals (RunReport) and a comparison of two runs (ComparisonReport),
// each as text, JSON, Markdown, JUnit XML or HTML. Renderers are plain
// functions of the form func(io.Writer, *X) error, as vegeta's reporters
// are; WriteRun and WriteComparison pick one by Format.
//
//   - Text is for a terminal: the overall result and success rate, goals
//     with PASS/FAIL, expected and actual, and endpoints busiest first with
//     requests, failures, avg, p95, p99 (ms) and SQL statements per request;
//     a comparison shows both sides' p95/p99, the change, SQL per request
//     and the verdict, with each endpoint's explanation below.
//   - JSON (RunDocument, ComparisonDocument) carries at least the keys
//     DESIGN.md's CLI contract lists; keys are added, never renamed.
//   - Markdown opens with a "### Result" block — Ran (what was compared),
//     Outcome (the verdict in one line), Numbers (a table per endpoint and
//     the explanations), Artifacts (paths the caller gives) and Next (what to
//     do) — fit for a pull-request comment, a CI step summary and an agent.
//   - JUnit XML has a test case per endpoint (a comparison's regression
//     fails it, an inconclusive endpoint is skipped; in a run report an
//     endpoint fails when a goal on it was missed) and per goal, wiring
//     faults as errors; it keeps the junit-10 schema's rules (Jenkins'
//     xUnit plugin) and its times are seconds of the run's load.
//   - HTML is one self-contained page: inline CSS, no scripts, no external
//     assets.
//
// InventoryText renders what package snapshots' Inspect found in a snapshot.
//
// The reports read these RunInfo.Settings keys when the replayer sets them:
// "load" (a description of the load model, which wins), else "vus", "rate",
// "iterations" and "duration"; and "cmd" (a build started as a command,
// named instead of the target URL).
//
// It computes nothing of its own beyond formatting and advice; it does not
// decide exit codes (RunReport.Passed and ComparisonReport.Passed say what
// the CLI should do).
package report
