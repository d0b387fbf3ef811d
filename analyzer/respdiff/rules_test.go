package respdiff

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
)

func TestRulesFlags(t *testing.T) {
	var r Rules
	f := pflag.NewFlagSet("x", pflag.ContinueOnError)
	r.AddFlags(f)
	err := f.Parse([]string{
		"--ignore", "$.served_at,$.meta.request_id", "--ignore", `$["a,b"][*].c`,
		"--ignore-header", "x-request-id", "--unordered", "$.items", "--accept-diff", "status, $.id",
		"--compare-header", "X-Version,ETag",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Rules{
		Ignore:        []string{"$.served_at", "$.meta.request_id", `$["a,b"][*].c`},
		IgnoreHeaders: []string{"x-request-id"},
		Unordered:     []string{"$.items"},
		Accept:        []string{"status", "$.id"},
		Headers:       []string{"X-Version", "ETag"},
	}
	if diff := cmp.Diff(want, r); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
	r.IgnoreHeaders = append(r.IgnoreHeaders, "cache-control")
	wantHeaders := []string{"Content-Type", "Location", "Content-Disposition", "Content-Language", "X-Version", "Etag"}
	if diff := cmp.Diff(wantHeaders, r.CompareHeaders()); diff != "" {
		t.Errorf("compared headers (-want +got):\n%s", diff)
	}
}

func TestComparerDiff(t *testing.T) {
	c, err := Rules{Unordered: []string{"$.tags"}, Headers: []string{"X-Version"}, IgnoreHeaders: []string{"Content-Type"}}.Compile()
	if err != nil {
		t.Fatal(err)
	}
	a := Answer{Status: 200, Header: http.Header{"X-Version": {"1"}, "Content-Type": {"a"}}, Body: []byte(`{"tags":["x","y"],"n":1}`)}
	b := Answer{Status: 200, Header: http.Header{"X-Version": {"2"}, "Content-Type": {"b"}}, Body: []byte(`{"tags":["y","x"],"n":2}`)}
	want := []string{`header:X-Version changed: "1" → "2"`, `$.n changed: number 1 → number 2`}
	if diff := cmp.Diff(want, brief(c.Diff(a, b))); diff != "" {
		t.Errorf("diffs (-want +got):\n%s", diff)
	}
}
