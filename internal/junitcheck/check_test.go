package junitcheck

import (
	"context"
	"errors"
	"strings"
	"testing"
)

const valid = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="replay compare" tests="3" failures="1" errors="0" time="12.500">
  <testsuite name="replay.compare" tests="3" failures="1" errors="0" skipped="1" time="12.500" timestamp="2025-03-01T12:00:00">
    <testcase name="GET /orders" classname="replay.compare" time="10.000">
      <failure message="N+1" type="regression">N+1</failure>
      <system-out>regression</system-out>
    </testcase>
    <testcase name="GET /catalog" classname="replay.compare" time="0.500"><skipped message="too few"></skipped></testcase>
    <testcase name="POST /orders" classname="replay.compare" time="2.000"></testcase>
  </testsuite>
</testsuites>
`

// TestCheck: Check accepts a report that keeps the rules and names each
// broken one; where the rule is the schema's (schema: true), xmllint with
// the vendored junit-10.xsd rejects the same document, so the Go rules
// and the schema agree.
func TestCheck(t *testing.T) {
	if err := Check([]byte(valid)); err != nil {
		t.Fatalf("valid report: %v", err)
	}
	if err := XMLLint(context.Background(), []byte(valid)); err != nil && !errors.Is(err, ErrNoXMLLint) {
		t.Fatalf("valid report: %v", err)
	}
	for _, tc := range []struct {
		name, old, new, want string
		schema               bool
	}{
		{"skipped on testsuites", `errors="0" time="12.500">`, `errors="0" skipped="1" time="12.500">`, `attribute skipped="1" not allowed on <testsuites>`, true},
		{"suite without errors", `failures="1" errors="0" skipped="1"`, `failures="1" skipped="1"`, `<testsuite> lacks attribute errors`, true},
		{"suite without name", `<testsuite name="replay.compare"`, `<testsuite`, `<testsuite> lacks attribute name`, true},
		{"time with 4 decimals", `time="10.000"`, `time="10.0001"`, `time="10.0001" is not seconds`, false},
		{"suite time negative", `skipped="1" time="12.500"`, `skipped="1" time="-12.5"`, `time="-12.5" is not seconds`, true},
		{"case without name", `<testcase name="POST /orders"`, `<testcase`, `<testcase> lacks attribute name`, true},
		{"case without time", `classname="replay.compare" time="2.000"`, `classname="replay.compare"`, `<testcase> lacks attribute time`, false},
		{"unknown element", `<system-out>regression</system-out>`, `<stdout>regression</stdout>`, `<stdout> not allowed in <testcase>`, true},
		{"attribute on a case", `time="0.500">`, `time="0.500" status="skipped">`, `attribute status="skipped" not allowed on <testcase>`, true},
		{"count off", `tests="3" failures="1" errors="0" skipped="1"`, `tests="4" failures="1" errors="0" skipped="1"`, `tests="4", want 3`, false},
		{"skipped count off", `errors="0" skipped="1"`, `errors="0" skipped="0"`, `skipped="0", want 1`, false},
		{"two outcomes", `<skipped message="too few"></skipped>`, `<skipped message="too few"></skipped><failure message="x"/>`, `2 outcomes`, false},
		{"bad timestamp", `timestamp="2025-03-01T12:00:00"`, `timestamp="1 March 2025"`, `timestamp="1 March 2025"`, false},
		{"text in a suite", `<testcase name="POST /orders"`, `stray <testcase name="POST /orders"`, `<testsuite> holds text`, true},
		{"root testsuite", "<testsuites name=\"replay compare\" tests=\"3\" failures=\"1\" errors=\"0\" time=\"12.500\">\n", "", `root element <testsuite>`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(valid, tc.old, tc.new, 1)
			if tc.name == "root testsuite" {
				doc = strings.Replace(doc, "</testsuites>\n", "", 1)
			}
			if doc == valid {
				t.Fatalf("%q not in the report", tc.old)
			}
			err := Check([]byte(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Check: %v; want an error with %q", err, tc.want)
			}
			if !tc.schema {
				return
			}
			if err := XMLLint(context.Background(), []byte(doc)); errors.Is(err, ErrNoXMLLint) {
				t.Skip(err)
			} else if err == nil {
				t.Errorf("xmllint accepted it")
			}
		})
	}
}
