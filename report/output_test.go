package report

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRelativeArtifacts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cmp")
	as := []Artifact{
		{"baseline run", filepath.Join(dir, "baseline.run")},
		{"build log", filepath.Join(dir, "logs", "b.log")},
		{"elsewhere", "/var/tmp/x.run"},
		{"sibling", dir + "-other/y.run"},
	}
	got := RelativeArtifacts(as, dir)
	want := []string{"baseline.run", "logs/b.log", "/var/tmp/x.run", dir + "-other/y.run"}
	for i, a := range got {
		if a.Path != want[i] {
			t.Errorf("%s: %q, want %q", a.Name, a.Path, want[i])
		}
	}
	if as[0].Path != filepath.Join(dir, "baseline.run") {
		t.Errorf("RelativeArtifacts changed its argument")
	}
	// A relative directory, as a user gives --out.
	t.Chdir(filepath.Dir(dir))
	if got := RelativeArtifacts([]Artifact{{"r", "cmp/report.md"}}, "./cmp/"); got[0].Path != "report.md" {
		t.Errorf("relative dir: %q", got[0].Path)
	}
	// A relative path outside the directory, as `replay report runs --out
	// rep` has: seen from rep, not from the working directory.
	if got := RelativeArtifacts([]Artifact{{"r", "runs/baseline.run"}}, "rep"); got[0].Path != "../runs/baseline.run" {
		t.Errorf("relative path outside dir: %q, want ../runs/baseline.run", got[0].Path)
	}
}

func TestOutputWritesEveryFormat(t *testing.T) {
	r := comparisonFixture(t)
	dir := filepath.Join(t.TempDir(), "new", "out")
	r.Artifacts = []Artifact{{"baseline run", filepath.Join(dir, "baseline.run")}}
	var stdout bytes.Buffer
	o := Output{Formats: []Format{Markdown, JSON}, Dir: dir}
	if err := o.WriteComparison(&stdout, r); err != nil {
		t.Fatal(err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 2 {
		t.Fatalf("dir holds %q", names)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "- baseline run: `baseline.run`\n- JSON report: `report.json`\n- Markdown report: `report.md`") {
		t.Errorf("report.md artifacts not relative to its directory:\n%s", md)
	}
	if !strings.Contains(stdout.String(), "- Markdown report: `"+filepath.Join(dir, "report.md")+"`") || !strings.HasPrefix(stdout.String(), "### Result") {
		t.Errorf("stdout is not the Markdown naming the files as given:\n%s", stdout.String())
	}
	if got := r.Artifacts; len(got) != 3 || got[2].Path != filepath.Join(dir, "report.md") {
		t.Errorf("the report's artifacts after writing: %+v", got)
	}
	// Written again to the same directory: each report listed once.
	if err := o.WriteComparison(&stdout, r); err != nil || len(r.Artifacts) != 3 {
		t.Errorf("again: %v, artifacts %+v", err, r.Artifacts)
	}
}

func TestOutputFailureRemovesTheDirectoryItMade(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	err := Output{Formats: []Format{Text, JSON}, Dir: dir}.WriteComparison(&bytes.Buffer{}, &ComparisonReport{})
	if err == nil {
		t.Fatal("no error for a report without a comparison")
	}
	if names, _ := os.ReadDir(parent); len(names) != 0 {
		t.Errorf("left behind %v", names)
	}
	// A directory that existed stays.
	os.Mkdir(dir, 0o755)
	Output{Formats: []Format{Text}, Dir: dir}.WriteComparison(&bytes.Buffer{}, &ComparisonReport{})
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("removed a directory it did not make: %v", err)
	}
}

func TestOutputFlags(t *testing.T) {
	tests := []struct {
		values []string
		dir    string
		want   []Format
		err    string
	}{
		{nil, "", []Format{Text}, ""},
		{[]string{"json,md", "html", "json"}, "d", []Format{JSON, Markdown, HTML}, ""},
		{[]string{"json", "text"}, "", nil, "several formats need --out DIR"},
		{[]string{"json,pdf"}, "d", nil, `unknown format "pdf"`},
	}
	for _, tt := range tests {
		o := OutputFlags{Formats: tt.values, Dir: tt.dir}
		got, err := o.Output("out")
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) || !slices.Equal(got.Formats, tt.want) {
			t.Errorf("%q: %v, %v; want %v, %q", tt.values, got.Formats, err, tt.want, tt.err)
		}
	}
	if _, err := (&OutputFlags{Formats: []string{"json,text"}}).Output(""); err == nil || !strings.Contains(err.Error(), "give one format") {
		t.Errorf("no directory flag: %v", err)
	}
}

func TestOneFormat(t *testing.T) {
	tests := []struct {
		values  []string
		allowed []string
		want    string
		err     string
	}{
		{nil, []string{"text", "json"}, "text", ""},
		{[]string{"JSON", "json,json"}, []string{"text", "json"}, "json", ""},
		{[]string{"json", "text"}, []string{"text", "json"}, "", "--format json,text: give one format"},
		{[]string{"yaml"}, []string{"text", "json"}, "", `--format "yaml": want text, json`},
		{nil, nil, "", ""},
		{[]string{"har"}, nil, "har", ""},
		{[]string{"har,jsonl"}, nil, "", "give one format"},
	}
	for _, tt := range tests {
		got, err := OneFormat(tt.values, tt.allowed...)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("OneFormat(%q, %q) = %q, %v; want %q, %q", tt.values, tt.allowed, got, err, tt.want, tt.err)
		}
	}
}
