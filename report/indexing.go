package report

import (
	"fmt"
	"io"
	"os"
	"time"
)

// bigSnapshot is the size from which a terminal is told that the snapshot
// is being indexed: about 3 s of indexing here.
const bigSnapshot = 256 << 20

// IndexingNote tells a terminal (notes, when terminal) that a big
// snapshot is being indexed before the load, and done how many requests
// (and recorded calls, for a mock) it holds, the size of their spool and
// how long that took; nothing for a small one or another writer.
func IndexingNote(notes io.Writer, path string, terminal bool) (done func(requests, calls int, spooled int64)) {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() < bigSnapshot || !terminal {
		return func(int, int, int64) {}
	}
	start := time.Now()
	fmt.Fprintf(notes, "replay: indexing %s (%s) before the load…\n", path, byteSize(fi.Size()))
	return func(requests, calls int, spooled int64) {
		what := count(int64(requests)) + " requests"
		if calls > 0 {
			what += " and " + count(int64(calls)) + " recorded calls"
		}
		if spooled > 0 {
			what += " indexed and spooled (" + byteSize(spooled) + ")"
		} else {
			what += " indexed"
		}
		fmt.Fprintf(notes, "replay: %s in %s\n", what, time.Since(start).Round(100*time.Millisecond))
	}
}

// byteSize is n bytes in MB or GB to one decimal.
func byteSize(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.0f MB", float64(n)/1e6)
}
