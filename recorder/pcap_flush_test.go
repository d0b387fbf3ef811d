package recorder

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestImportPcapDeterministic imports, many times, a capture the fuzzer
// found (FuzzImportPcapng): simple packet blocks (no timestamps) with lost
// and mangled segments, so that the end of the capture flushes a connection
// with bytes still buffered in both directions, among them a HEAD request
// and its response. The assembler flushes in map order: when the response
// came out before the request, it took the next message's first 15 bytes
// for a body, one run in two. Every import must give the same exchanges.
func TestImportPcapDeterministic(t *testing.T) {
	data := fuzzCorpusBytes(t, "testdata/fuzz/FuzzImportPcapng/48c8cc3a75844029")
	var first string
	for i := range 40 {
		sink := &pcapSink{}
		if _, err := ImportPcap(context.Background(), bytes.NewReader(data), sink, PcapConfig{BodyLimit: 64}); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range sink.sorted() {
			fmt.Fprintf(&b, "%d %s %s %d %d %q %q\n", e.ID, e.Method, e.URL, e.Status, e.ResponseBodySize, e.ResponseBody, e.Error)
		}
		if i == 0 {
			first = b.String()
			continue
		}
		if b.String() != first {
			t.Fatalf("import %d differs from the first:\n%s\nfirst:\n%s", i+1, b.String(), first)
		}
	}
}

// fuzzCorpusBytes reads the one []byte value of a fuzz corpus file.
func fuzzCorpusBytes(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || lines[0] != "go test fuzz v1" {
		t.Fatalf("%s: not a one-value fuzz corpus file", path)
	}
	s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(s)
}
