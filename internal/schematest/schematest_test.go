package schematest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSchemasCompile: every schema in docs/schema is a valid JSON Schema
// (the compiler checks it against the 2020-12 meta-schema).
func TestSchemasCompile(t *testing.T) {
	names, _ := filepath.Glob(filepath.Join(Dir(), "*.json"))
	if len(names) < 6 {
		t.Fatalf("docs/schema holds %d schemas", len(names))
	}
	for _, n := range names {
		if _, err := Schema(strings.TrimSuffix(filepath.Base(n), ".json")); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
}

// TestValidateRejects: a document without schema_version, or of another
// version, or with a key of the wrong type, is refused.
func TestValidateRejects(t *testing.T) {
	ok := `{"schema_version": 1, "statements": 3, "errors": 0, "fingerprints": [{"fingerprint": "SELECT ?", "count": 3, "errors": 0, "total_ms": 1.5, "mean_ms": 0.5}]}`
	if err := Validate("sqlcount", []byte(ok)); err != nil {
		t.Fatalf("a valid document: %v", err)
	}
	for _, bad := range []string{
		`{"statements": 3, "errors": 0, "fingerprints": []}`,
		`{"schema_version": 2, "statements": 3, "errors": 0, "fingerprints": []}`,
		`{"schema_version": 1, "statements": "3", "errors": 0, "fingerprints": []}`,
		`{"schema_version": 1, "statements": 3, "errors": 0, "fingerprints": [{"fingerprint": "x"}]}`,
	} {
		if err := Validate("sqlcount", []byte(bad)); err == nil {
			t.Errorf("%s: valid", bad)
		}
	}
	if _, err := os.Stat(filepath.Join(Dir(), "common.json")); err != nil {
		t.Error(err)
	}
}
