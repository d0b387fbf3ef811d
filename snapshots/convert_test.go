package snapshots

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatOf(t *testing.T) {
	for name, want := range map[string]Format{
		"a.har": HAR, "dir.x/A.HAR": HAR, "a.jsonl": JSONL, "a.ndjson": JSONL, "a.NDJSON": JSONL,
		"a.json": "", "har": "", "-": "", "": "",
	} {
		if got := FormatOf(name); got != want {
			t.Errorf("FormatOf(%q) = %q, want %q", name, got, want)
		}
	}
}

// TestExportFileImport exports to a file in each format, checks that the
// file holds what Export writes and nothing else is left in its directory,
// and imports it back into a snapshot with the same contents.
func TestExportFileImport(t *testing.T) {
	src := variedSnapshot(t)
	want := readAll(t, src)
	ctx := context.Background()
	for _, f := range []Format{JSONL, HAR} {
		t.Run(string(f), func(t *testing.T) {
			s, err := Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var direct bytes.Buffer
			if err := Export(ctx, s, &direct, f); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "out."+string(f))
			if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := ExportFile(ctx, s, path, f); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(direct.String(), string(got)); diff != "" {
				t.Errorf("ExportFile wrote (-Export +ExportFile):\n%s", diff)
			}
			if names := dirNames(t, dir); !cmp.Equal(names, []string{"out." + string(f)}) {
				t.Errorf("directory holds %q, want the export alone", names)
			}

			dst := filepath.Join(dir, "copy.snap")
			w, err := Create(dst, Options{})
			if err != nil {
				t.Fatal(err)
			}
			in, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			if err := w.CloseOrRemove(Import(ctx, in, w, f, HAROptions{})); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, readAll(t, dst)); diff != "" {
				t.Errorf("round trip through %s (-want +got):\n%s", f, diff)
			}
		})
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestExportFileFails: an export that cannot finish leaves the old file as
// it was and no temporary file.
func TestExportFileFails(t *testing.T) {
	s, err := Open(variedSnapshot(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.har")
	if err := os.WriteFile(path, []byte("old contents"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ExportFile(ctx, s, path, HAR); !errors.Is(err, context.Canceled) {
		t.Errorf("ExportFile with a canceled context: %v, want context.Canceled", err)
	}
	if err := ExportFile(context.Background(), s, path, "csv"); err == nil || !strings.Contains(err.Error(), `unknown format "csv"`) {
		t.Errorf("ExportFile in csv: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "old contents" {
		t.Errorf("the old file now holds %q", b)
	}
	if names := dirNames(t, dir); !cmp.Equal(names, []string{"out.har"}) {
		t.Errorf("directory holds %q, want the old file alone", names)
	}
	err = ExportFile(context.Background(), s, filepath.Join(dir, "missing", "out.har"), HAR)
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "snapshot export: ") {
		t.Errorf("ExportFile into a missing directory: %v", err)
	}
}

// TestCloseOrRemove: a failed import leaves no snapshot (nor its WAL), a
// good one is kept.
func TestCloseOrRemove(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.snap")
	w, err := Create(bad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	half := "{\"format\":\"replay-jsonl\",\"version\":1}\n{\"type\":\"exchange\",\"id\":1,\"direction\":\"inbound\",\"method\":\"GET\",\"url\":\"/a\"}\nnot json\n"
	err = w.CloseOrRemove(Import(ctx, strings.NewReader(half), w, JSONL, HAROptions{}))
	if !errors.Is(err, ErrNothingImported) {
		t.Errorf("CloseOrRemove after an import of nothing but bad lines: %v, want the import's error", err)
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Errorf("left behind: %q", names)
	}

	good := filepath.Join(dir, "good.snap")
	if w, err = Create(good, Options{}); err != nil {
		t.Fatal(err)
	}
	w.AddExchange(sampleExchange(1))
	if err := w.CloseOrRemove(nil); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, good); len(got.Exchanges) != 1 {
		t.Errorf("kept snapshot holds %d exchanges, want 1", len(got.Exchanges))
	}
}
