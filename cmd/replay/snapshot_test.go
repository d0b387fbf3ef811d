package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// withoutHeader drops the first line of a JSON Lines export: it carries the
// snapshot's creation time, which differs between copies.
func withoutHeader(t *testing.T, jsonl string) string {
	t.Helper()
	head, rest, ok := strings.Cut(jsonl, "\n")
	if !ok || !strings.Contains(head, `"format":"replay-jsonl"`) {
		t.Fatalf("export does not start with a header line: %.200q", jsonl)
	}
	return rest
}

func exportJSONL(t *testing.T, snap string) string {
	t.Helper()
	code, stdout, stderr := cliRun(t, "", "snapshot", "export", snap, "--format", "jsonl")
	if code != 0 {
		t.Fatalf("export %s: exit %d: %s", snap, code, stderr)
	}
	return stdout
}

func TestSnapshotRoundTrips(t *testing.T) {
	snap := importFixture(t)
	want := exportJSONL(t, snap)
	fixture, err := os.ReadFile("testdata/orders.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(want, "\n"); got != strings.Count(string(fixture), "\n") {
		t.Fatalf("export has %d lines, the imported file %d", got, strings.Count(string(fixture), "\n"))
	}
	dir := t.TempDir()

	t.Run("jsonl via stdin and stdout", func(t *testing.T) {
		copySnap := filepath.Join(dir, "copy.snap")
		code, stdout, stderr := cliRun(t, want, "snapshot", "import", "-", "--format", "jsonl", "--out", copySnap)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if wantMsg := "imported 14 exchanges (12 inbound, 2 outbound) and 216 SQL statements into " + copySnap + "; 0 entries rejected\n"; stdout != wantMsg {
			t.Errorf("stdout %q, want %q", stdout, wantMsg)
		}
		if diff := cmp.Diff(withoutHeader(t, want), withoutHeader(t, exportJSONL(t, copySnap))); diff != "" {
			t.Errorf("jsonl round trip (-want +got):\n%s", diff)
		}
	})
	t.Run("har via files", func(t *testing.T) {
		har := filepath.Join(dir, "orders.har")
		code, stdout, stderr := cliRun(t, "", "snapshot", "export", snap, "-o", har) // format from the extension
		if code != 0 || stdout != "" {
			t.Fatalf("export: exit %d, stdout %q: %s", code, stdout, stderr)
		}
		copySnap := filepath.Join(dir, "from-har.snap")
		if code, _, stderr := cliRun(t, "", "snapshot", "import", har, "--out", copySnap); code != 0 {
			t.Fatalf("import: exit %d: %s", code, stderr)
		}
		if diff := cmp.Diff(withoutHeader(t, want), withoutHeader(t, exportJSONL(t, copySnap))); diff != "" {
			t.Errorf("har round trip (-want +got):\n%s", diff)
		}
		// The inventory of the copy equals the original's.
		_, a, _ := cliRun(t, "", "inspect", snap, "--format", "json")
		_, b, _ := cliRun(t, "", "inspect", copySnap, "--format", "json")
		if diff := cmp.Diff(strings.ReplaceAll(a, snap, "X"), strings.ReplaceAll(b, copySnap, "X")); diff != "" {
			t.Errorf("inspect differs after the har round trip:\n%s", diff)
		}
	})
}

func TestSnapshotImportEndpointRules(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "rules.snap")
	code, _, stderr := cliRun(t, "", "snapshot", "import", "testdata/orders.jsonl", "--out", snap,
		"--endpoint", "GET /orders/{order}", "--endpoint", "* /catalog")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	_, stdout, _ := cliRun(t, "", "inspect", snap)
	for _, want := range []string{"GET /orders/{order}", "GET /catalog", "GET /orders "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("inspect lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "GET /orders/{id}") {
		t.Errorf("the rule did not replace GET /orders/{id}:\n%s", stdout)
	}
}

func TestSnapshotImportBrowserHAR(t *testing.T) {
	snap := filepath.Join(t.TempDir(), "chrome.snap")
	code, stdout, stderr := cliRun(t, "", "snapshot", "import", "../../snapshots/testdata/chrome.har", "--out", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "imported 4 exchanges (4 inbound, 0 outbound)") {
		t.Errorf("stdout %q", stdout)
	}
	out := filepath.Join(t.TempDir(), "upstream.snap")
	code, stdout, stderr = cliRun(t, "", "snapshot", "import", "../../snapshots/testdata/firefox.har", "--out", out, "--direction", "outbound")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "imported 4 exchanges (0 inbound, 4 outbound)") {
		t.Errorf("stdout %q", stdout)
	}
}

func TestSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	existing := importFixture(t)
	notJSON := filepath.Join(dir, "notes.har")
	if err := os.WriteFile(notJSON, []byte("these are notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badSnap := filepath.Join(dir, "bad.snap")
	tests := []struct {
		name string
		args []string
		code int
		want string
		gone string // a file that must not exist afterwards
	}{
		{"no command", []string{"snapshot"}, 2, "snapshot: missing command", ""},
		{"unknown command", []string{"snapshot", "merge"}, 2, `snapshot: unknown command "merge"`, ""},
		{"export no args", []string{"snapshot", "export"}, 2, "arg", ""},
		{"export no format", []string{"snapshot", "export", existing}, 2, "--format is required", ""},
		{"export bad format", []string{"snapshot", "export", existing, "--format", "csv"}, 2, `unknown --format "csv"`, ""},
		{"export missing snapshot", []string{"snapshot", "export", filepath.Join(dir, "nope.snap"), "--format", "har"}, 1, "nope.snap: no such file", ""},
		{"export to a missing dir", []string{"snapshot", "export", existing, "-o", filepath.Join(dir, "no", "x.har")}, 1, "snapshot export", ""},
		{"import no out", []string{"snapshot", "import", "testdata/orders.jsonl"}, 2, "--out SNAP is required", ""},
		{"import stdin no format", []string{"snapshot", "import", "-", "--out", badSnap}, 2, "--format is required", ""},
		{"import bad rule", []string{"snapshot", "import", "testdata/orders.jsonl", "--out", badSnap, "--endpoint", "orders"}, 2, `parse endpoint rule "orders"`, badSnap},
		{"import missing file", []string{"snapshot", "import", filepath.Join(dir, "nope.jsonl"), "--out", badSnap}, 1, "no such file", badSnap},
		{"import over a file", []string{"snapshot", "import", "testdata/orders.jsonl", "--out", existing}, 1, "file exists: remove it or choose another path", ""},
		{"import bad direction", []string{"snapshot", "import", "x.har", "--out", badSnap, "--direction", "up"}, 2, `unknown --direction "up"`, badSnap},
		{"import direction jsonl", []string{"snapshot", "import", "testdata/orders.jsonl", "--out", badSnap, "--direction", "outbound"}, 2, "--direction applies to HAR files only", badSnap},
		{"import not har", []string{"snapshot", "import", notJSON, "--out", badSnap}, 1, "snapshot import " + notJSON + ": import har: not a HAR file", badSnap},
		{"import har as jsonl", []string{"snapshot", "import", "../../snapshots/testdata/chrome.har", "--format", "jsonl", "--out", badSnap}, 1, "line 1: not a replay JSON Lines file", badSnap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := cliRun(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line saying %q", stderr, tt.want)
			}
			if tt.gone != "" {
				if _, err := os.Stat(tt.gone); err == nil {
					t.Errorf("%s was left behind", tt.gone)
				}
			}
		})
	}
	// The existing snapshot is untouched.
	if _, stdout, _ := cliRun(t, "", "inspect", existing); !strings.Contains(stdout, "14 exchanges") {
		t.Errorf("existing snapshot changed: %s", stdout)
	}
}

// TestSnapshotImportRejects: entries that break the rules are named on
// stderr and skipped, the summary counts them; a file of which nothing
// imports exits 1 and leaves no snapshot behind.
func TestSnapshotImportRejects(t *testing.T) {
	dir := t.TempDir()
	jsonl := filepath.Join(dir, "mixed.jsonl")
	lines := []string{
		`{"format":"replay-jsonl","version":1}`,
		`{"type":"exchange","id":1,"direction":"inbound","method":"GET","url":"http://a/1","status":200}`,
		`{"type":"exchange","id":2,"direction":"inbound","url":"http://a/2","status":200}`,
		`{"type":"exchange","id":3,"direction":"inbound","method":"GET","url":"http://a/3","status":99999}`,
		`{"type":"exchange","id":4,"method":"GET","url":"http://a/4","status":200}`,
		`{"type":"exchange","id":5,"direction":"outbound","method":"GET","url":"http://b/5","status":200,"duration_ns":-1}`,
		`{"type":"exchange","id":6,"direction":"outbound","method":"GET","url":"http://b/6","status":204}`,
	}
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "mixed.snap")
	code, stdout, stderr := cliRun(t, "", "snapshot", "import", jsonl, "--out", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "replay snapshot import: entry 2 (line 3): exchange 2: no method; skipped\n" +
		"replay snapshot import: entry 3 (line 4): exchange 3: status 99999 out of range 100–599; skipped\n" +
		"replay snapshot import: entry 4 (line 5): exchange 4: no direction (want inbound or outbound); skipped\n" +
		"replay snapshot import: entry 5 (line 6): exchange 5: negative duration -1ns; skipped\n"
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if wantOut := "imported 2 exchanges (1 inbound, 1 outbound) and 0 SQL statements into " + snap + "; 4 entries rejected\n"; stdout != wantOut {
		t.Errorf("stdout %q, want %q", stdout, wantOut)
	}

	har := filepath.Join(dir, "bad.har")
	entries := `{"log":{"entries":[{"startedDateTime":"2024-05-14T09:21:38Z","request":{"method":"GET","url":"localhost:8080/orders"},"response":{"status":200}},` +
		`{"startedDateTime":"2024-05-14T09:21:39Z","request":{"method":"GET","url":"http://a/%zz"},"response":{"status":200}}]}}`
	if err := os.WriteFile(har, []byte(entries), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bad.snap")
	code, stdout, stderr = cliRun(t, "", "snapshot", "import", har, "--out", out)
	if code != 1 || stdout != "" {
		t.Errorf("exit %d, stdout %q; want exit 1 and nothing on stdout", code, stdout)
	}
	want = `replay snapshot import: entry 1: url "localhost:8080/orders" is not http(s); skipped` + "\n" +
		`replay snapshot import: entry 2: bad url "http://a/%zz"; skipped` + "\n" +
		"replay: snapshot import " + har + `: import har: nothing imported: 2 entries rejected (the first: entry 1: url "localhost:8080/orders" is not http(s))` + "\n"
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was left behind", out)
	}
}

// TestSnapshotImportBadLines: lines of a JSON Lines file that are not JSON
// are skipped like any rejected entry, the rest imported (exit 0); past the
// first 20 the rest are counted in one line; a file of nothing but bad
// lines exits 1.
func TestSnapshotImportBadLines(t *testing.T) {
	dir := t.TempDir()
	const head = `{"format":"replay-jsonl","version":1}`
	good := func(id int) string {
		return fmt.Sprintf(`{"type":"exchange","id":%d,"direction":"inbound","method":"GET","url":"http://a/%d","status":200}`, id, id)
	}
	lines := []string{head, good(1)}
	for i := range 25 {
		lines = append(lines, fmt.Sprintf(`{"type":"exchange","id":%d,"method":GET}`, 100+i))
	}
	lines = append(lines, good(2), `{"type":"exchange","id":3,"direction":"inb`)
	jsonl := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, "bad.snap")
	code, stdout, stderr := cliRun(t, "", "snapshot", "import", jsonl, "--out", snap)
	if code != exitOK {
		t.Fatalf("exit %d, want 0: %s", code, stderr)
	}
	var want strings.Builder
	for i := range 20 {
		fmt.Fprintf(&want, "replay snapshot import: entry %d (line %d): bad JSON: invalid character 'G' looking for beginning of value; skipped\n", i+2, i+3)
	}
	want.WriteString("replay snapshot import: … and 6 more entries skipped (26 in all)\n")
	if diff := cmp.Diff(want.String(), stderr); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
	if w := "imported 2 exchanges (2 inbound, 0 outbound) and 0 SQL statements into " + snap + "; 26 entries rejected\n"; stdout != w {
		t.Errorf("stdout %q, want %q", stdout, w)
	}
	if _, out, _ := cliRun(t, "", "inspect", snap); !strings.Contains(out, "2 exchanges") {
		t.Errorf("inspect of the import: %s", out)
	}

	// Nothing but bad lines: nothing imported, exit 1, no snapshot.
	if err := os.WriteFile(jsonl, []byte(head+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	none := filepath.Join(dir, "none.snap")
	code, _, stderr = cliRun(t, "", "snapshot", "import", jsonl, "--out", none)
	if code != exitError || !strings.Contains(stderr, "nothing imported: 1 entry rejected (the first: entry 1 (line 2): bad JSON") {
		t.Errorf("exit %d, stderr %q; want exit 1 saying nothing was imported", code, stderr)
	}
	if _, err := os.Stat(none); err == nil {
		t.Errorf("%s was left behind", none)
	}
}
