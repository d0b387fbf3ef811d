package respdiff

import (
	"testing"
)

// FuzzCompareJSON: flattening and comparing any two bodies never panics;
// a body equals itself; two bodies differ both ways or neither; every
// path flattened parses back to itself and generalises to a parseable
// path.
func FuzzCompareJSON(f *testing.F) {
	for _, s := range [][2]string{
		{`{"a":1,"b":[1,2,{"c":"x"}]}`, `{"a":"1","b":[2,1,{"c":null}]}`},
		{`[{"id":1},{"id":2}]`, `[{"id":2},{"id":1}]`},
		{`{"a.b":{"x y":true},"":{}}`, `{"a.b":[],"\u00e9":1e400}`},
		{`{"n":1.0}`, `{"n":1}`},
		{"text\nlines\n", "text\nLines\n"},
		{"\x00\x01", "\x00\x02"},
	} {
		f.Add([]byte(s[0]), []byte(s[1]))
	}
	env := &pairEnv{headers: DefaultHeaders, unordered: func(s []seg) bool { return len(s) == 1 }}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		if leaves, err := Flatten(a); err == nil {
			for _, l := range leaves {
				segs, err := parseJSONPath(l.Path)
				if err != nil {
					t.Fatalf("path %q of a leaf does not parse: %v", l.Path, err)
				}
				if p := formatPath(segs, false); p != l.Path {
					t.Fatalf("path %q formats back as %q", l.Path, p)
				}
				if _, err := parseJSONPath(Generalize(l.Path)); err != nil {
					t.Fatalf("generalised %q does not parse: %v", Generalize(l.Path), err)
				}
			}
		}
		x, y := jsonAnswer(string(a)), jsonAnswer(string(b))
		if d := diffAnswers(x, x, env); len(d) != 0 {
			t.Fatalf("a body differs from itself: %v", brief(d))
		}
		ab, ba := diffAnswers(x, y, env), diffAnswers(y, x, env)
		if (len(ab) == 0) != (len(ba) == 0) {
			t.Fatalf("asymmetric: a→b %v, b→a %v", brief(ab), brief(ba))
		}
		for _, d := range ab {
			if err := CheckPath(d.General()); err != nil && d.Path != "body" {
				t.Fatalf("difference at %q: its general path does not parse: %v", d.Path, err)
			}
		}
		exampleDiff(x, y, env)
	})
}
