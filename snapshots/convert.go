package snapshots

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Format is a portable format that snapshots are exported to and imported
// from.
type Format string

// The portable formats.
const (
	// JSONL is JSON Lines: a header line, then a line per exchange and
	// per statement (ExportJSONL).
	JSONL Format = "jsonl"
	// HAR is HAR 1.2, with replay's own fields under "_replay" (ExportHAR).
	HAR Format = "har"
)

// FormatOf returns the format a file name implies by its extension (.jsonl
// and .ndjson, .har, in any case), or "" when it implies none.
func FormatOf(name string) Format {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".har":
		return HAR
	case ".jsonl", ".ndjson":
		return JSONL
	}
	return ""
}

// ParseFormat returns the format named by flag, or when flag is empty the
// one file's name implies (FormatOf); an error when it is neither JSONL
// nor HAR, in the words of the --format flag.
func ParseFormat(flag, file string) (Format, error) {
	f := Format(flag)
	if f == "" {
		f = FormatOf(file)
	}
	switch f {
	case JSONL, HAR:
		return f, nil
	case "":
		return "", errors.New("--format is required (jsonl or har)")
	}
	return f, fmt.Errorf("unknown --format %q (want jsonl or har)", flag)
}

// Export writes s to w in format f.
func Export(ctx context.Context, s *Snapshot, w io.Writer, f Format) error {
	switch f {
	case JSONL:
		return ExportJSONL(ctx, s, w)
	case HAR:
		return ExportHAR(ctx, s, w)
	}
	return fmt.Errorf("export snapshot: unknown format %q", f)
}

// ExportFile writes s to the file path in format f, whole or not at all: it
// writes a temporary file next to path and renames it over path once
// complete, so a failed export leaves neither a half file nor a temporary
// one behind. Errors of the file start with "snapshot export:"; those of
// reading s are Export's.
func ExportFile(ctx context.Context, s *Snapshot, path string, f Format) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("snapshot export: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := Export(ctx, s, tmp, f); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("snapshot export: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("snapshot export: %w", err)
	}
	return nil
}

// Import reads r in format f into w; opts.Direction applies to HAR files
// only (JSON Lines records carry their direction). Entries that break the
// rules are skipped and told to opts.Rejected; a file from which nothing
// could be imported is an error (ErrNothingImported).
func Import(ctx context.Context, r io.Reader, w *Writer, f Format, opts ImportOptions) error {
	switch f {
	case JSONL:
		return ImportJSONLWith(ctx, r, w, opts)
	case HAR:
		return ImportHARWith(ctx, r, w, opts)
	}
	return fmt.Errorf("import snapshot: unknown format %q", f)
}
