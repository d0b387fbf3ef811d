package respdiff

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/replaykit/replay/snapshots"
)

// answers makes a side: IDs 1 to n, each answered twice by body(id, k).
func answers(n int, body func(id int64, k int) string) *Side {
	s := &Side{}
	for id := int64(1); id <= int64(n); id++ {
		for k := range 2 {
			s.Add(id, jsonAnswer(body(id, k)))
		}
	}
	return s
}

// stamp is a value that differs on every call, like a timestamp or UUID.
var stamp int

func unique() string {
	stamp++
	return fmt.Sprintf("2026-12-01T17:%02d:%02d.%06dZ", stamp/60%60, stamp%60, stamp)
}

func compile(t *testing.T, r Rules) *Comparer {
	t.Helper()
	c, err := r.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEndpointTypeChange(t *testing.T) {
	base := answers(20, func(id int64, k int) string {
		return fmt.Sprintf(`{"id":%d,"served_at":%q,"name":"n%d"}`, id, unique(), id)
	})
	cand := answers(20, func(id int64, k int) string {
		return fmt.Sprintf(`{"id":"%d","served_at":%q,"name":"n%d"}`, id, unique(), id)
	})
	s := compile(t, Rules{}).Endpoint(base, cand, nil)
	if s.Compared != 40 || s.Sampled != 40 || s.Differing != 40 {
		t.Errorf("compared %d, sampled %d, differing %d; want 40, 40, 40", s.Compared, s.Sampled, s.Differing)
	}
	want := []Group{{Path: "$.id", Kind: KindChanged, Baseline: "number 1", Candidate: `string "1"`, Count: 40, Of: 40,
		Example: Example{ExchangeID: 1, Path: "$.id"}}}
	if diff := cmp.Diff(want, s.Differences, cmpopts.IgnoreFields(Example{}, "Diff")); diff != "" {
		t.Errorf("differences (-want +got):\n%s", diff)
	}
	if got, w := s.Sentence(), "`$.id`: number 1 → string \"1\" in 40 of 40 responses"; got != w {
		t.Errorf("sentence %q, want %q", got, w)
	}
	if d := s.Differences[0].Example.Diff; !strings.Contains(d, "-   \"id\": 1,\n+   \"id\": \"1\",") {
		t.Errorf("example diff lacks the change:\n%s", d)
	}
	wantIgnored := []Ignored{{Path: "$.served_at", Reason: ReasonBaseline, Count: 40}}
	if diff := cmp.Diff(wantIgnored, s.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

// TestEndpointAA: two runs of one build whose answers carry timestamps,
// UUIDs and request ids, in the body and in a compared header, and lists
// in a varying order: nothing differs, and each is listed as ignored.
func TestEndpointAA(t *testing.T) {
	build := func(flip bool) *Side {
		s := &Side{}
		for id := int64(1); id <= 10; id++ {
			for k := range 2 {
				items := `[{"sku":"a"},{"sku":"b"},{"sku":"c"}]`
				if (k == 1) != flip {
					items = `[{"sku":"c"},{"sku":"a"},{"sku":"b"}]`
				}
				a := jsonAnswer(fmt.Sprintf(`{"id":%d,"at":%q,"uuid":"%08x-0000","meta":{"request_id":"r%d"},"items":%s}`, id, unique(), stamp, stamp, items))
				a.Header.Set("Cache-Control", "max-age="+fmt.Sprint(stamp))
				s.Add(id, a)
			}
		}
		return s
	}
	s := compile(t, Rules{}).Endpoint(build(false), build(true), nil)
	if s.Differing != 0 || s.Compared != 20 {
		t.Errorf("A/A: %d of %d differing, want 0 of 20: %+v", s.Differing, s.Compared, s.Differences)
	}
	var ignored []string
	for _, ig := range s.Ignored {
		ignored = append(ignored, ig.Path+": "+ig.Reason)
	}
	want := []string{"$.at: " + ReasonBaseline, "$.meta.request_id: " + ReasonBaseline, "$.uuid: " + ReasonBaseline,
		"header:Cache-Control: " + ReasonBaseline, "$.items: order " + ReasonBaseline}
	if diff := cmp.Diff(want, ignored, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}

	// A real change inside the list learned unordered still shows.
	cand := build(true)
	for id, as := range cand.Samples {
		for k := range as {
			as[k].Body = []byte(strings.Replace(string(as[k].Body), `"b"`, `"B"`, 1))
		}
		cand.Samples[id] = as
	}
	s = compile(t, Rules{}).Endpoint(build(false), cand, nil)
	if s.Differing != 20 || len(s.Differences) != 1 || s.Differences[0].Path != "$.items[*].sku" {
		t.Errorf("a changed item of a list learned unordered: %d differing, %+v", s.Differing, s.Differences)
	}
}

// TestEndpointRecording: a field the baseline answers the same twice but
// that differs from the recording is noise too; with another status the
// recording teaches nothing.
func TestEndpointRecording(t *testing.T) {
	body := func(at string) func(int64, int) string {
		return func(id int64, k int) string { return fmt.Sprintf(`{"id":%d,"build":%q}`, id, at) }
	}
	rec := &Side{}
	for id := int64(1); id <= 5; id++ {
		rec.Add(id, jsonAnswer(fmt.Sprintf(`{"id":%d,"build":"recorded"}`, id)))
	}
	s := compile(t, Rules{}).Endpoint(answers(5, body("base")), answers(5, body("cand")), rec)
	if s.Differing != 0 || len(s.Ignored) != 1 || s.Ignored[0] != (Ignored{Path: "$.build", Reason: ReasonRecording, Count: 10}) {
		t.Errorf("noise from the recording: %d differing, ignored %+v", s.Differing, s.Ignored)
	}
	for _, as := range rec.Samples {
		as[0].Status = 500
	}
	if s := compile(t, Rules{}).Endpoint(answers(5, body("base")), answers(5, body("cand")), rec); s.Differing != 10 {
		t.Errorf("a recording of another status: %d differing, want 10", s.Differing)
	}
}

func TestEndpointRules(t *testing.T) {
	base := answers(4, func(id int64, k int) string { return fmt.Sprintf(`{"id":%d,"v":1,"tags":["a","b"],"x":1}`, id) })
	cand := answers(4, func(id int64, k int) string { return fmt.Sprintf(`{"id":"%d","v":2,"tags":["b","a"],"x":1}`, id) })
	c := compile(t, Rules{Ignore: []string{"$.v"}, Unordered: []string{"$.tags"}, Accept: []string{"$.id"}})
	s := c.Endpoint(base, cand, nil)
	if s.Differing != 0 || len(s.Differences) != 0 {
		t.Errorf("differing %d: %+v", s.Differing, s.Differences)
	}
	if len(s.Accepted) != 1 || s.Accepted[0].Path != "$.id" || s.Accepted[0].Count != 8 {
		t.Errorf("accepted %+v, want $.id in 8", s.Accepted)
	}
	if diff := cmp.Diff([]Ignored{{Path: "$.v", Reason: ReasonRule, Count: 8}}, s.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	// Without the rules: three differences, one of them a reordering.
	s = compile(t, Rules{}).Endpoint(base, cand, nil)
	var got []string
	for _, g := range s.Differences {
		got = append(got, g.Sentence())
	}
	want := []string{"`$.id`: number 1 → string \"1\" in 8 of 8 responses", "`$.tags` reordered (same 2 items, another order) in 8 of 8 responses",
		"`$.v`: number 1 → number 2 in 8 of 8 responses"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sentences (-want +got):\n%s", diff)
	}
	if got, w := s.Sentence(), want[0]+"; 2 more differences (`$.tags`, `$.v`)"; got != w {
		t.Errorf("summary sentence %q, want %q", got, w)
	}
}

// TestEndpointHashes: answers beyond the sample count as compared, and as
// differing by body only without noise; by status always.
func TestEndpointHashes(t *testing.T) {
	hashes := func(status int, hash uint64) []snapshots.ResponseHash {
		var out []snapshots.ResponseHash
		for id := int64(1); id <= 10; id++ {
			out = append(out, snapshots.ResponseHash{ExchangeID: id, Status: 200, Hash: 1, Count: 3})
		}
		out = append(out, snapshots.ResponseHash{ExchangeID: 11, Status: status, Hash: hash, Count: 5})
		return out
	}
	fixed := func(id int64, k int) string { return `{"a":1}` }
	noisy := func(id int64, k int) string { return fmt.Sprintf(`{"a":1,"at":%q}`, unique()) }
	for _, tc := range []struct {
		name      string
		body      func(int64, int) string
		status    int
		hash      uint64
		differing int64
		sentence  string
	}{
		{"same", fixed, 200, 1, 0, ""},
		{"other body", fixed, 200, 2, 5, "body differs by hash in 5 of 37 answers beyond the sample"},
		{"other body, noisy endpoint", noisy, 200, 2, 0, ""},
		{"other status, noisy endpoint", noisy, 503, 1, 5, "status 200 → 503 in 5 of 37 answers beyond the sample"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, cand := answers(2, tc.body), answers(2, tc.body)
			base.Hashes = hashes(200, 1)
			base.Hashes = append(base.Hashes, snapshots.ResponseHash{ExchangeID: 12, Status: 200, Hash: 7, Count: 1},
				snapshots.ResponseHash{ExchangeID: 12, Status: 200, Hash: 8, Count: 1})
			cand.Hashes = hashes(tc.status, tc.hash)
			cand.Hashes = append(cand.Hashes, snapshots.ResponseHash{ExchangeID: 12, Status: 200, Hash: 9, Count: 2},
				snapshots.ResponseHash{ExchangeID: 99, Status: 200, Hash: 9, Count: 2})
			s := compile(t, Rules{}).Endpoint(base, cand, nil)
			if s.Hashed != 37 || s.Compared != 41 || s.Differing != tc.differing || s.Sentence() != tc.sentence {
				t.Errorf("hashed %d, compared %d, differing %d, %q; want 37, 41, %d, %q", s.Hashed, s.Compared, s.Differing,
					s.Sentence(), tc.differing, tc.sentence)
			}
		})
	}
}

// TestCheck: a build against the recording, whose redacted values and the
// build's own noise are ignored; a changed field is named.
func TestCheck(t *testing.T) {
	var recorded []*snapshots.Exchange
	for id := int64(1); id <= 6; id++ {
		body := fmt.Sprintf(`{"id":%d,"token":"[REDACTED]","at":"recorded","total":10}`, id)
		recorded = append(recorded, &snapshots.Exchange{ID: id, Service: "127.0.0.1:7000", Endpoint: "GET /o/{id}", Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(body), ResponseBodySize: int64(len(body))})
	}
	rec := RecordedSide(recorded)
	build := func(total string) *Side {
		return answers(6, func(id int64, k int) string {
			return fmt.Sprintf(`{"id":%d,"token":"tok%d","at":%q,"total":%s}`, id, stamp, unique(), total)
		})
	}
	c := compile(t, Rules{})
	s := c.Check(build("10"), rec)
	if s.Differing != 0 || s.Compared != 12 {
		t.Errorf("same build: %d of %d differing: %+v", s.Differing, s.Compared, s.Differences)
	}
	reasons := map[string]string{}
	for _, ig := range s.Ignored {
		reasons[ig.Path] = ig.Reason
	}
	if reasons["$.token"] != ReasonBuild && reasons["$.token"] != ReasonRedacted || reasons["$.at"] != ReasonBuild {
		t.Errorf("ignored %+v", s.Ignored)
	}
	s = c.Check(build("11"), rec)
	if got, w := s.Sentence(), "`$.total`: number 10 → number 11 in 12 of 12 responses"; got != w {
		t.Errorf("changed build: %q, want %q", got, w)
	}
}

func TestRulesCompile(t *testing.T) {
	for _, tc := range []struct {
		rules Rules
		err   string
	}{
		{Rules{Ignore: []string{"$.a", "$.items[*].id", `$["x y"][2]`, "status", "body", "header:X-Id", "line:3", "$.*"}}, ""},
		{Rules{Ignore: []string{"served_at"}}, `--ignore: path "served_at": want a JSON path starting with $`},
		{Rules{Ignore: []string{"$.a..b"}}, `--ignore: path "$.a..b": empty key after '.'`},
		{Rules{Accept: []string{"$.a[x]"}}, `--accept-diff: path "$.a[x]": [x]: want an index from 0, * or a quoted key`},
		{Rules{Accept: []string{"$.a[1"}}, `'[' not closed`},
		{Rules{Accept: []string{`$["a`}}, `quoted key not closed`},
		{Rules{Ignore: []string{"line:0"}}, `want line:N with N from 1`},
		{Rules{Ignore: []string{"header:"}}, `want header:NAME`},
		{Rules{Unordered: []string{"status"}}, `--unordered: path "status": want a JSON path`},
		{Rules{Headers: []string{"X Y"}}, `--compare-header "X Y": want a header name`},
		{Rules{IgnoreHeaders: []string{""}}, `--ignore-header "": want a header name`},
	} {
		err := tc.rules.Validate()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%+v: %v", tc.rules, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%+v: error %v, want one line with %q", tc.rules, err, tc.err)
		}
	}
}

// TestCheckHashes: answers beyond the sample are compared with the hash
// of the recorded body, unless the recording redacted a value in it.
func TestCheckHashes(t *testing.T) {
	body := func(id int64) string {
		if id == 6 {
			return `{"id":6,"token":"[REDACTED]"}`
		}
		return fmt.Sprintf(`{"id":%d}`, id)
	}
	var recorded []*snapshots.Exchange
	for id := int64(1); id <= 7; id++ {
		b := body(id)
		recorded = append(recorded, &snapshots.Exchange{ID: id, Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody: []byte(b), ResponseBodySize: int64(len(b))})
	}
	build := answers(4, func(id int64, k int) string { return body(id) })
	build.Hashes = []snapshots.ResponseHash{
		{ExchangeID: 5, Status: 200, Hash: fnv64([]byte(body(5))), Count: 3},
		{ExchangeID: 6, Status: 200, Hash: fnv64([]byte(`{"id":6,"token":"t-1"}`)), Count: 2},
		{ExchangeID: 7, Status: 200, Hash: fnv64([]byte(`{"id":"7"}`)), Count: 1},
	}
	s := compile(t, Rules{}).Check(build, RecordedSide(recorded))
	if s.Sampled != 8 || s.Hashed != 3+1 || s.Differing != 1 || s.Sentence() != "body differs by hash in 1 of 4 answers beyond the sample" {
		t.Errorf("sampled %d, hashed %d, differing %d, %q; want 8, 4, 1 and the body by hash", s.Sampled, s.Hashed, s.Differing, s.Sentence())
	}
}

// TestEndpointStatus: another status leads the sentence, before the body
// that came with it.
func TestEndpointStatus(t *testing.T) {
	base := answers(3, func(id int64, k int) string { return fmt.Sprintf(`{"id":%d}`, id) })
	cand := &Side{}
	for id := int64(1); id <= 3; id++ {
		for range 2 {
			a := jsonAnswer(`{"error":"boom"}`)
			a.Status = 500
			cand.Add(id, a)
		}
	}
	s := compile(t, Rules{}).Endpoint(base, cand, nil)
	if got, want := s.Sentence(), "status 200 → 500 in 6 of 6 responses; 2 more differences (`$.error`, `$.id`)"; got != want {
		t.Errorf("sentence %q, want %q", got, want)
	}
}

// TestEndpointCandidateSequence: a POST's made-up id, drawn from a
// sequence reset before each phase, came out the same in the baseline's
// two answers and differed in the candidate's, one of which is the
// baseline's: noise, not a change. A candidate whose every answer is apart
// from the baseline's still differs.
func TestEndpointCandidateSequence(t *testing.T) {
	base := answers(10, func(id int64, k int) string {
		return fmt.Sprintf(`{"id":%d,"total":%d}`, 60+id, id*10)
	})
	cand := answers(10, func(id int64, k int) string {
		return fmt.Sprintf(`{"id":%d,"total":%d}`, 60+id+int64(k)*44, id*10)
	})
	s := compile(t, Rules{}).Endpoint(base, cand, nil)
	if s.Differing != 0 || len(s.Differences) != 0 {
		t.Errorf("differing %d: %+v; want none", s.Differing, s.Differences)
	}
	wantIgnored := []Ignored{{Path: "$.id", Reason: ReasonCandidate, Count: 10}}
	if diff := cmp.Diff(wantIgnored, s.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}

	// Every candidate answer apart: the id is a string now, and it varies.
	changed := answers(10, func(id int64, k int) string {
		return fmt.Sprintf(`{"id":"%d","total":%d}`, 60+id+int64(k)*44, id*10)
	})
	s = compile(t, Rules{}).Endpoint(base, changed, nil)
	if s.Differing != 20 || len(s.Differences) != 1 || s.Differences[0].Path != "$.id" {
		t.Errorf("differing %d: %+v; want 20 at $.id", s.Differing, s.Differences)
	}
}
