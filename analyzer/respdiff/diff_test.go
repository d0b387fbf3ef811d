package respdiff

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func jsonAnswer(body string) Answer {
	return Answer{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

// brief is a diff as tests spell it: path, kind, baseline → candidate.
func brief(ds []Diff) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Path+" "+d.Kind+": "+d.Baseline.String()+" → "+d.Candidate.String())
	}
	return out
}

func TestDiffAnswers(t *testing.T) {
	unordered := []seg{{kind: segKey, key: "tags"}}
	env := &pairEnv{headers: DefaultHeaders, unordered: func(s []seg) bool { return len(s) == 1 && matchSegs(unordered, s) }}
	for _, tc := range []struct {
		name string
		a, b Answer
		want []string
	}{
		{"equal", jsonAnswer(`{"a":1}`), jsonAnswer(`{"a":1}`), nil},
		{"same value, other spelling and key order", jsonAnswer(`{"a":1,"b":[1.0, "x"]}`), jsonAnswer(`{ "b": [1, "x"], "a": 1.00 }`), nil},
		{"type change", jsonAnswer(`{"id":7}`), jsonAnswer(`{"id":"7"}`), []string{`$.id changed: number 7 → string "7"`}},
		{"dropped and added", jsonAnswer(`{"a":1,"email":"x@y"}`), jsonAnswer(`{"a":1,"nick":null}`),
			[]string{`$.email dropped: string "x@y" → absent`, `$.nick added: absent → null`}},
		{"object became a string", jsonAnswer(`{"a":{"b":1,"c":2}}`), jsonAnswer(`{"a":"b"}`), []string{`$.a changed: object (2 keys) → string "b"`}},
		{"reordered", jsonAnswer(`{"items":[{"id":1},{"id":2},{"id":3}]}`), jsonAnswer(`{"items":[{"id":3},{"id":1},{"id":2}]}`),
			[]string{`$.items reordered: array (3 items) → array (3 items)`}},
		{"item changed", jsonAnswer(`{"items":[{"id":1},{"id":2}]}`), jsonAnswer(`{"items":[{"id":1},{"id":5},{"id":6}]}`),
			[]string{`$.items[1].id changed: number 2 → number 5`, `$.items[2] added: absent → object (1 key)`}},
		{"unordered: order free", jsonAnswer(`{"tags":["a","b","a"]}`), jsonAnswer(`{"tags":["b","a","a"]}`), nil},
		{"unordered: the item of one side", jsonAnswer(`{"tags":["a","b","c"]}`), jsonAnswer(`{"tags":["c","a","d"]}`),
			[]string{`$.tags[0] changed: string "b" → string "d"`}},
		{"odd key", jsonAnswer(`{"a.b":{"x y":true}}`), jsonAnswer(`{"a.b":{"x y":false}}`), []string{`$["a.b"]["x y"] changed: bool true → bool false`}},
		{"root array", jsonAnswer(`[1]`), jsonAnswer(`[]`), []string{`$[0] dropped: number 1 → absent`}},
		{"status and headers", Answer{Status: 200, Header: http.Header{"Content-Type": {"text/plain"}, "X-Other": {"1"}}},
			Answer{Status: 404, Header: http.Header{"Content-Type": {"text/html"}, "Location": {"/x"}, "X-Other": {"2"}}},
			[]string{`status changed: 200 → 404`, `header:Content-Type changed: "text/plain" → "text/html"`, `header:Location added: absent → "/x"`}},
		{"JSON facing text", jsonAnswer(`{"a":1}`), Answer{Status: 200, Body: []byte("oops")},
			[]string{`header:Content-Type dropped: "application/json" → absent`, `body changed: 7 bytes (JSON, hash ` + hex(`{"a":1}`) + `) → 4 bytes (not JSON, hash ` + hex("oops") + `)`}},
		{"text by line", Answer{Body: []byte("a\nb\nc\nd\n")}, Answer{Body: []byte("a\nB\nc\nd\ne\n")},
			[]string{`line:2 changed: "b" → "B"`, `line:5 added: absent → "e"`}},
		{"text line removed", Answer{Body: []byte("a\nb\nc")}, Answer{Body: []byte("a\nc")}, []string{`line:2 dropped: "b" → absent`}},
		{"binary", Answer{Body: []byte{0, 1}}, Answer{Body: []byte{0, 2}},
			[]string{`body changed: 2 bytes (binary, hash ` + hex("\x00\x01") + `) → 2 bytes (binary, hash ` + hex("\x00\x02") + `)`}},
		{"cut short", Answer{Body: []byte(`{"a":`), BodySize: 90000, Truncated: true}, Answer{Body: []byte(`{"b":`), BodySize: 90000, Truncated: true},
			[]string{`body changed: 90000 bytes, 5 kept (cut, hash ` + hex(`{"a":`) + `) → 90000 bytes, 5 kept (cut, hash ` + hex(`{"b":`) + `)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, brief(diffAnswers(tc.a, tc.b, env))); diff != "" {
				t.Errorf("diffs (-want +got):\n%s", diff)
			}
		})
	}
}

func hex(s string) string {
	const digits = "0123456789abcdef"
	h := fnv64([]byte(s))
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[h&15]
		h >>= 4
	}
	return string(b[:])
}

// TestDiffHosts: a build's own address in bodies and headers reads the
// same on both sides.
func TestDiffHosts(t *testing.T) {
	a := jsonAnswer(`{"self":"http://127.0.0.1:8081/orders/1"}`)
	a.Header.Set("Location", "http://127.0.0.1:8081/orders/1")
	b := jsonAnswer(`{"self":"http://127.0.0.1:9092/orders/1"}`)
	b.Header.Set("Location", "http://127.0.0.1:9092/orders/1")
	env := &pairEnv{headers: DefaultHeaders, hostA: hostOf("http://127.0.0.1:8081"), hostB: "127.0.0.1:9092"}
	if d := diffAnswers(a, b, env); len(d) != 0 {
		t.Errorf("with the hosts: %v", brief(d))
	}
	env.hostB = ""
	if d := brief(diffAnswers(a, b, env)); len(d) != 2 || !strings.HasPrefix(d[1], "$.self changed") {
		t.Errorf("without them: %v, want Location and $.self", d)
	}
}

func TestFlattenAndGeneralize(t *testing.T) {
	leaves, err := Flatten([]byte(`{"b":[{"id":1},{}],"a":{"x y":"s"},"n":null,"e":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range leaves {
		got = append(got, l.Path+"="+l.Value.String()+" ("+Generalize(l.Path)+")")
	}
	want := []string{
		`$.a["x y"]=string "s" ($.a["x y"])`,
		`$.b[0].id=number 1 ($.b[*].id)`,
		`$.b[1]=object (0 keys) ($.b[*])`,
		`$.e=array (0 items) ($.e)`,
		`$.n=null ($.n)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leaves (-want +got):\n%s", diff)
	}
	if _, err := Flatten([]byte(`{"a":1} x`)); err == nil {
		t.Error("Flatten of JSON followed by garbage: no error")
	}
}
