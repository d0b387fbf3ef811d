package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// OutputFlags are the flags of a command that writes a report: --format
// (repeatable and comma-separated) and, when the command has one, the
// directory every format is written to.
type OutputFlags struct {
	// Formats are the --format values as given.
	Formats []string
	// Dir is the directory flag's value; empty: none.
	Dir string
}

// AddFlags declares --format and, unless dirFlag is empty, the directory
// flag dirFlag (`--out` of replay report, `--report-dir` of replay run).
func (o *OutputFlags) AddFlags(f *pflag.FlagSet, dirFlag string) {
	f.StringArrayVar(&o.Formats, "format", []string{"text"}, "output `FORMAT`: text, json, markdown, junit or html (repeatable or comma-separated: "+
		"the first goes to stdout, each to DIR/report.EXT when there is a DIR)")
	if dirFlag != "" {
		f.StringVar(&o.Dir, dirFlag, "", "write every --format to `DIR`/report.EXT (created when missing)")
	}
}

// Output validates the flags. Its errors are usage errors: an unknown
// format (a *FormatError), or several formats and no directory (dirFlag
// names the flag that would give one; empty when the command has none).
func (o *OutputFlags) Output(dirFlag string) (Output, error) {
	formats, err := ParseFormats(o.Formats)
	if err != nil {
		return Output{}, err
	}
	if len(formats) > 1 && o.Dir == "" {
		if dirFlag == "" {
			return Output{}, errors.New("--format: give one format (the report goes to stdout)")
		}
		return Output{}, fmt.Errorf("several formats need --%s DIR to write them to (the first goes to stdout)", dirFlag)
	}
	return Output{Formats: formats, Dir: o.Dir}, nil
}

// Output is where a command writes its report: the first of Formats to
// its standard output and, when Dir is set, every format to
// Dir/report.EXT. The reports in Dir name the artifacts inside Dir by
// paths relative to it, so that the directory can be moved, uploaded or
// linked from a pull request; the copy on standard output names them as
// the caller gave them (relative to the working directory).
type Output struct {
	// Formats are the formats, in order; none means Text.
	Formats []Format
	// Dir is the output directory; empty: standard output alone.
	Dir string
}

// WriteComparison writes r (see Output); the report files join
// r.Artifacts first, in the order of Formats(), so that every report
// lists them all.
func (o Output) WriteComparison(w io.Writer, r *ComparisonReport) error {
	return o.write(w, &r.Artifacts, func(w io.Writer, f Format) error { return WriteComparison(w, f, r) })
}

// WriteRun writes r as WriteComparison writes a comparison.
func (o Output) WriteRun(w io.Writer, r *RunReport) error {
	return o.write(w, &r.Artifacts, func(w io.Writer, f Format) error { return WriteRun(w, f, r) })
}

func (o Output) write(w io.Writer, artifacts *[]Artifact, render func(io.Writer, Format) error) error {
	formats := o.Formats
	if len(formats) == 0 {
		formats = []Format{Text}
	}
	if o.Dir != "" {
		if err := o.writeFiles(formats, artifacts, render); err != nil {
			return err
		}
	}
	return render(w, formats[0])
}

// writeFiles writes every format to Dir, creating it when missing; when it
// fails, it removes the directory it created.
func (o Output) writeFiles(formats []Format, artifacts *[]Artifact, render func(io.Writer, Format) error) (err error) {
	if _, statErr := os.Stat(o.Dir); errors.Is(statErr, os.ErrNotExist) {
		if err := os.MkdirAll(o.Dir, 0o755); err != nil {
			return err
		}
		defer func() {
			if err != nil {
				os.RemoveAll(o.Dir)
			}
		}()
	}
	given := slices.Clone(*artifacts)
	for _, f := range Formats() {
		p := filepath.Join(o.Dir, f.FileName())
		if slices.Contains(formats, f) && !slices.ContainsFunc(given, func(a Artifact) bool { return filepath.Clean(a.Path) == p }) {
			given = append(given, Artifact{Name: f.Title(), Path: p})
		}
	}
	*artifacts = RelativeArtifacts(given, o.Dir)
	defer func() { *artifacts = given }()
	for _, f := range formats {
		var b bytes.Buffer
		if err := render(&b, f); err != nil {
			return fmt.Errorf("%s report: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(o.Dir, f.FileName()), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// RelativeArtifacts returns as with their paths as seen from dir, for a
// report written into dir: the files inside dir relative to it
// ("baseline.run"), relative paths outside it too ("../runs/b.run", not
// the working directory's "runs/b.run"); absolute paths outside dir stay
// as they are.
func RelativeArtifacts(as []Artifact, dir string) []Artifact {
	out := slices.Clone(as)
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return out
	}
	for i, a := range out {
		p, err := filepath.Abs(a.Path)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(absDir, p)
		if err != nil {
			continue
		}
		outside := rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
		if !outside || !filepath.IsAbs(a.Path) {
			out[i].Path = filepath.ToSlash(rel)
		}
	}
	return out
}

// OneFormat reads the --format values of a command that writes one
// document (inspect: text or json; ca: text, json or env; snapshot
// export: jsonl or har): each value may be a comma-separated list, repeats
// are one, and anything but one of allowed (the first is the default) is
// an error naming them. With no allowed, any one name goes (the caller
// checks it) and none gives "".
func OneFormat(values []string, allowed ...string) (string, error) {
	var names []string
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.ToLower(strings.TrimSpace(name))
			if len(allowed) > 0 && !slices.Contains(allowed, name) {
				return "", fmt.Errorf("--format %q: want %s", name, strings.Join(allowed, ", "))
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	switch {
	case len(names) == 0 && len(allowed) == 0:
		return "", nil
	case len(names) == 0:
		return allowed[0], nil
	case len(names) == 1:
		return names[0], nil
	}
	return "", fmt.Errorf("--format %s: give one format", strings.Join(names, ","))
}
