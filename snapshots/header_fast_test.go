package snapshots

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseHeaderFast: what the fast path reads, it reads as encoding/json
// does, for headers as the writer writes them; anything it does not know
// (escapes, spaces, bad JSON) it leaves to encoding/json.
func TestParseHeaderFast(t *testing.T) {
	headers := []http.Header{
		{},
		{"Accept": {"*/*"}},
		{"A": {"1", "2"}, "B": {""}, "C": {}},
		{"Quote": {`say "hi"`}, "Path": {`C:\\x`}},
		{"Utf8": {"héllo"}, "Html": {"<a>&"}},
	}
	for _, h := range headers {
		s, _ := headerJSON(h).(string)
		if s == "" {
			continue
		}
		var want http.Header
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := parseHeaderFast(s); ok {
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s (-json +fast):\n%s", s, d)
			}
		}
	}
	for _, s := range []string{`{"A": ["1"]}`, `{"A":["1"]`, `{"A":["1"]}x`, `{"A":"1"}`, `{"A\\"":["1"]}`, `{"A":["1",]}`, `["1"]`} {
		if _, ok := parseHeaderFast(s); ok {
			t.Errorf("%s: read by the fast path, want it left to encoding/json", s)
		}
	}
}
