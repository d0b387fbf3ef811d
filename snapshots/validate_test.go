package snapshots

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// importRejects imports input in format f and returns what it imported and
// the rejections as their strings.
func importRejects(t *testing.T, f Format, input string) (snapshotContents, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var rejected []string
	opts := ImportOptions{Rejected: func(r *Rejected) { rejected = append(rejected, r.String()) }}
	if err := w.CloseOrRemove(Import(context.Background(), strings.NewReader(input), w, f, opts)); err != nil {
		t.Fatalf("import: %v", err)
	}
	return readAll(t, path), rejected
}

// TestImportJSONLRejects: a record that breaks the rules, or a line that is
// not JSON, is skipped and named with its reason; the good records around
// it are imported.
func TestImportJSONLRejects(t *testing.T) {
	const head = `{"format":"replay-jsonl","version":1}` + "\n"
	good := func(id int) string {
		return fmt.Sprintf(`{"type":"exchange","id":%d,"direction":"inbound","method":"GET","url":"http://a/x","status":200,"duration_ns":5}`, id)
	}
	tests := []struct{ name, record, want string }{
		{"no method", `{"type":"exchange","id":2,"direction":"inbound","url":"http://a/x","status":200}`, "exchange 2: no method"},
		{"no url", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","status":200}`, "exchange 2: no url"},
		{"no direction", `{"type":"exchange","id":2,"method":"GET","url":"http://a/x","status":200}`, "exchange 2: no direction (want inbound or outbound)"},
		{"bad direction", `{"type":"exchange","id":2,"direction":"sideways","method":"GET","url":"http://a/x","status":200}`, `exchange 2: unknown direction "sideways"`},
		{"status 99999", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/x","status":99999}`, "exchange 2: status 99999 out of range 100–599"},
		{"status 42", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/x","status":42}`, "exchange 2: status 42 out of range 100–599"},
		{"status 0 no error", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/x"}`, "exchange 2: status 0 without an error"},
		{"negative duration", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/x","status":200,"duration_ns":-5}`, "exchange 2: negative duration -5ns"},
		{"bad url", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/%zz","status":200}`, `exchange 2: bad url "http://a/%zz"`},
		{"bad method", `{"type":"exchange","id":2,"direction":"inbound","method":"GE T","url":"http://a/x","status":200}`, `exchange 2: method "GE T" is not an HTTP method`},
		{"negative size", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/x","status":200,"request_body_size":-1}`, "exchange 2: negative request_body_size -1"},
		{"duplicate", good(1), "exchange 1: duplicate id"},
		{"negative id", `{"type":"exchange","id":-2,"direction":"inbound","method":"GET","url":"http://a/x","status":200}`, "exchange -2: negative id"},
		{"bad base64", `{"type":"exchange","id":2,"direction":"inbound","method":"GET","url":"http://a/x","status":200,"request_body":"!!","request_body_encoding":"base64"}`, "exchange 2: request body"},
		{"wrong field type", `{"type":"exchange","id":2,"status":"200"}`, `field "status": got a JSON string, want int`},
		{"bad JSON", `{"type":"exchange","id":2,"method":GET}`, `bad JSON: invalid character 'G'`},
		{"cut short", `{"type":"exchange","id":2,"direction":"inb`, "bad JSON: unexpected end of line"},
		{"not JSON", `GET http://a/x 200`, "bad JSON: invalid character 'G'"},
		{"no type", `{"id":2}`, `no "type"`},
		{"unknown type", `{"type":"page"}`, `unknown type "page"`},
		{"statement negative duration", `{"type":"statement","id":2,"sql":"SELECT 1","duration_ns":-1}`, "statement 2: negative duration -1ns"},
		{"statement bad time", `{"type":"statement","id":2,"start":"yesterday"}`, `statement 2: bad time "yesterday"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := head + good(1) + "\n\n" + tt.record + "\n" + good(3) + "\n"
			got, rejected := importRejects(t, JSONL, input)
			var ids []int64
			for _, e := range got.Exchanges {
				ids = append(ids, e.ID)
			}
			if !cmp.Equal(ids, []int64{1, 3}) || len(got.Statements) != 0 {
				t.Errorf("imported exchanges %v and %d statements, want exchanges [1 3] alone", ids, len(got.Statements))
			}
			if len(rejected) != 1 || !strings.HasPrefix(rejected[0], "entry 2 (line 4): ") || !strings.Contains(rejected[0], tt.want) {
				t.Errorf("rejected %q, want one saying entry 2 (line 4): …%s", rejected, tt.want)
			}
		})
	}
}

// TestImportHARRejects: a HAR entry with a bad URL (or another fault) is
// named and skipped; data: and other browser-internal URLs are skipped
// without a word; the good entries are imported.
func TestImportHARRejects(t *testing.T) {
	entry := func(url, extra string) string {
		return `{"startedDateTime":"2024-05-14T09:21:38Z","time":3,"request":{"method":"GET","url":"` + url + `"},"response":{"status":200` + extra + `}}`
	}
	tests := []struct{ name, entry, want string }{
		{"no scheme", entry("localhost:8080/x", ""), `url "localhost:8080/x" is not http(s)`},
		{"relative", entry("/orders/1", ""), `url "/orders/1" is not http(s)`},
		{"ftp", entry("ftp://files.example/x", ""), `url "ftp://files.example/x" is not http(s)`},
		{"unparseable", entry("http://a/%zz", ""), `bad url "http://a/%zz"`},
		{"no host", entry("http:///x", ""), `url "http:///x" has no host`},
		{"status 99999", `{"startedDateTime":"2024-05-14T09:21:38Z","request":{"method":"GET","url":"http://a/"},"response":{"status":99999}}`, "status 99999 out of range 100–599"},
		{"no method", `{"startedDateTime":"2024-05-14T09:21:38Z","request":{"url":"http://a/"},"response":{"status":200}}`, "no method"},
		{"bad time", `{"startedDateTime":"noon","request":{"method":"GET","url":"http://a/"},"response":{"status":200}}`, `bad startedDateTime "noon"`},
		{"bad base64", entry("http://a/", `,"content":{"text":"%%","encoding":"base64"}`), "response body"},
		{"wrong field type", `{"request":{"method":5}}`, `field "request.method": got a JSON number, want string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			input := `{"log":{"entries":[` + entry("http://a/1", "") + "," + entry("data:text/plain,hi", "") + "," + tt.entry + "," + entry("http://a/3", "") + `]}}`
			got, rejected := importRejects(t, HAR, input)
			var urls []string
			for _, e := range got.Exchanges {
				urls = append(urls, e.URL)
			}
			if !cmp.Equal(urls, []string{"http://a/1", "http://a/3"}) {
				t.Errorf("imported %q, want http://a/1 and http://a/3", urls)
			}
			if len(rejected) != 1 || !strings.HasPrefix(rejected[0], "entry 3: ") || !strings.Contains(rejected[0], tt.want) {
				t.Errorf("rejected %q, want one saying entry 3: …%s", rejected, tt.want)
			}
		})
	}
}
