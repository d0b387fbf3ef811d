package respdiff

import (
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
