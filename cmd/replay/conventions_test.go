package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/schematest"
)

// dirEntries lists the names in dir, recursively, as dir/a/b.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// TestFailedCommandsLeaveNothingBehind runs every command that creates
// files or directories so that it fails, in an empty working directory:
// nothing must be left there but a build log that holds the build's
// output, which the error names.
func TestFailedCommandsLeaveNothingBehind(t *testing.T) {
	snap := runSnapshot(t, "GET /a")
	base, _ := goldenRuns(t, t.TempDir())
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("not a capture\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := []string{"--duration", "1s", "--warmup", "0", "--start-timeout", "2s"}
	tests := []struct {
		name string
		args []string
		want []string // what may stay: a build log with output
		msg  string   // in the error
	}{
		{"compare, default directory, build exits", append([]string{"compare", "--snapshot", snap, "--baseline-cmd", "exit 3", "--candidate-cmd", "exit 3"}, quiet...), nil, "exited with status 3"},
		{"compare --out, target never listens", append([]string{"compare", "--snapshot", snap, "--baseline-url", "http://127.0.0.1:1", "--candidate-url", "http://127.0.0.1:1", "--out", "cmp"}, quiet...), nil, "is not listening"},
		{"compare --out nested, build prints and exits", append([]string{"compare", "--snapshot", snap, "--baseline-cmd", "echo boom; exit 3", "--candidate-cmd", "exit 3", "--out", "a/b"}, quiet...),
			[]string{"a", "a/b", "a/b/baseline.log"}, "boom (logs kept: a/b/baseline.log)"},
		{"run, build exits", []string{"run", "--snapshot", snap, "--cmd", "exit 3", "--out", "r.run", "--report-dir", "reports"}, nil, "exited with status 3"},
		{"run, target never listens", []string{"run", "--snapshot", snap, "--target", "http://127.0.0.1:1", "--start-timeout", "200ms", "--out", "r.run"}, nil, "is not listening"},
		{"report --out, not a comparison", []string{"report", t.TempDir(), "--out", "rep"}, nil, "not the output directory"},
		{"report --out under a file", []string{"report", base, "--out", "r.run/x", "--format", "text,json"}, nil, ""},
		{"record --from-pcap, bad file", []string{"record", "--from-pcap", bad, "--out", "s.snap"}, nil, "not a pcap"},
		{"snapshot import, bad file", []string{"snapshot", "import", bad, "--format", "jsonl", "--out", "s.snap"}, nil, "import jsonl"},
		{"snapshot export, bad path", []string{"snapshot", "export", snap, "--format", "har", "-o", "none/x.har"}, nil, "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wd := t.TempDir()
			t.Chdir(wd)
			if strings.Contains(tt.name, "under a file") {
				os.WriteFile("r.run", nil, 0o644)
				defer os.Remove("r.run")
			}
			code, _, stderr := cliRun(t, "", tt.args...)
			if code != exitError || !strings.Contains(stderr, tt.msg) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stderr %q; want exit 1 and one line with %q", code, stderr, tt.msg)
			}
			got := dirEntries(t, wd)
			if strings.Contains(tt.name, "under a file") {
				got = slices.DeleteFunc(got, func(s string) bool { return s == "r.run" })
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("left behind %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFormatsOnRunAndReport: --format is repeatable and comma-separated on
// run and report as on compare; the first goes to stdout and each to
// DIR/report.EXT, whose artifacts are named relative to DIR.
func TestFormatsOnRunAndReport(t *testing.T) {
	rt := newRunTarget(t, 0)
	snap := runSnapshot(t, "GET /a", "GET /b")
	dir := t.TempDir()
	runFile, reports := filepath.Join(dir, "r.run"), filepath.Join(dir, "out")
	code, stdout, stderr := replayRun(t, "--snapshot", snap, "--target", rt.URL, "--iterations", "1", "--out", runFile,
		"--format", "json,markdown", "--format", "html", "--report-dir", reports)
	if code != exitOK {
		t.Fatalf("run: exit %d, stderr %s", code, stderr)
	}
	var doc struct {
		Artifacts []struct{ Name, Path string } `json:"artifacts"`
	}
	schematest.Check(t, "run", []byte(stdout))
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON report: %v\n%s", err, stdout)
	}
	if got := dirEntries(t, reports); !slices.Equal(got, []string{"report.html", "report.json", "report.md"}) {
		t.Errorf("--report-dir holds %q", got)
	}
	// stdout names the files as given; the files in DIR relative to DIR.
	if len(doc.Artifacts) != 4 || doc.Artifacts[0].Path != runFile || doc.Artifacts[1].Path != filepath.Join(reports, "report.json") {
		t.Errorf("stdout artifacts %+v", doc.Artifacts)
	}
	md, _ := os.ReadFile(filepath.Join(reports, "report.md"))
	for _, want := range []string{"- JSON report: `report.json`", "- Markdown report: `report.md`", "- HTML report: `report.html`", "- run file: `" + runFile + "`"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if html, _ := os.ReadFile(filepath.Join(reports, "report.html")); !strings.Contains(string(html), "<code>report.md</code>") || strings.Contains(string(html), reports) {
		t.Errorf("report.html does not name report.md relative to its directory")
	}

	// report RUN: the same, with --out DIR.
	again := filepath.Join(dir, "again")
	code, stdout, stderr = cliRun(t, "", "report", runFile, "--format", "text", "--format", "junit,json", "--out", again)
	if code != exitOK || !strings.Contains(stdout, "GET /a") {
		t.Fatalf("report: exit %d, stderr %s, stdout %s", code, stderr, stdout)
	}
	if got := dirEntries(t, again); !slices.Equal(got, []string{"report.json", "report.txt", "report.xml"}) {
		t.Errorf("report --out holds %q", got)
	}
	for _, args := range [][]string{
		{"run", "--snapshot", snap, "--target", rt.URL, "--out", filepath.Join(dir, "x.run"), "--format", "json,text"},
		{"report", runFile, "--format", "json", "--format", "text"},
	} {
		code, _, stderr := cliRun(t, "", args...)
		if code != exitUsage || !strings.Contains(stderr, "several formats need --") {
			t.Errorf("%s with two formats and no directory: exit %d, stderr %q", args[0], code, stderr)
		}
	}
}

// TestOneFormatCommands: inspect and ca print one document; --format takes
// repeats and lists of it, and refuses two.
func TestOneFormatCommands(t *testing.T) {
	snap := importFixture(t)
	code, stdout, stderr := cliRun(t, "", "inspect", snap, "--format", "JSON", "--format", "json,json")
	if code != exitOK {
		t.Fatalf("inspect: exit %d, %s", code, stderr)
	}
	schematest.Check(t, "inspect", []byte(stdout))
	code, stdout, stderr = cliRun(t, "", "ca", "--ca-dir", t.TempDir(), "--format", "json", "--format", "json")
	if code != exitOK {
		t.Fatalf("ca: exit %d, %s", code, stderr)
	}
	schematest.Check(t, "ca", []byte(stdout))
	code, stdout, _ = cliRun(t, "", "snapshot", "export", snap, "--format", "jsonl,JSONL")
	if code != exitOK || !strings.HasPrefix(stdout, `{"format":"replay-jsonl"`) {
		t.Errorf("snapshot export --format jsonl,JSONL: exit %d, %.80s", code, stdout)
	}
	for _, args := range [][]string{
		{"snapshot", "export", snap, "--format", "jsonl", "--format", "har"},
		{"snapshot", "import", snap, "--format", "har,jsonl", "--out", filepath.Join(t.TempDir(), "x.snap")},
		{"inspect", snap, "--format", "text,json"},
	} {
		code, _, stderr := cliRun(t, "", args...)
		if code != exitUsage || !strings.Contains(stderr, ": give one format") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and give one format", args, code, stderr)
		}
	}
}
