package report

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestIndexingNote: a terminal is told that a big snapshot is indexed
// before the load, and how many requests it holds; a small snapshot or
// another writer gets nothing.
func TestIndexingNote(t *testing.T) {
	dir := t.TempDir()
	big, small := filepath.Join(dir, "big.snap"), filepath.Join(dir, "small.snap")
	for path, size := range map[string]int64{big: bigSnapshot + 1e6, small: 1 << 20} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(size); err != nil { // sparse: only the size is read
			t.Fatal(err)
		}
		f.Close()
	}
	var b bytes.Buffer
	IndexingNote(&b, big, true)(3000000, 2999999, 0)
	want := regexp.MustCompile(`^replay: indexing .*big\.snap \(269 MB\) before the load…\nreplay: 3,000,000 requests and 2,999,999 recorded calls indexed in [0-9.]+m?s\n$`)
	if !want.MatchString(b.String()) {
		t.Errorf("big snapshot on a terminal:\n%s", b.String())
	}
	b.Reset()
	IndexingNote(&b, big, true)(300000, 0, 95e6)
	want = regexp.MustCompile(`\nreplay: 300,000 requests indexed and spooled \(95 MB\) in [0-9.]+m?s\n$`)
	if !want.MatchString(b.String()) {
		t.Errorf("big snapshot spooled, on a terminal:\n%s", b.String())
	}
	for _, c := range []struct {
		path     string
		terminal bool
	}{{small, true}, {big, false}, {filepath.Join(dir, "missing.snap"), true}} {
		b.Reset()
		IndexingNote(&b, c.path, c.terminal)(10, 0, 1000)
		if b.Len() != 0 {
			t.Errorf("%s (terminal %v): %q, want nothing", c.path, c.terminal, b.String())
		}
	}
	if got := byteSize(3391225856); got != "3.4 GB" {
		t.Errorf("byteSize: %q", got)
	}
}
