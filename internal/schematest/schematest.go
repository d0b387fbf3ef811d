// Package schematest checks replay's JSON documents against their JSON
// Schemas in docs/schema/ (run.json, comparison.json, inspect.json,
// ca.json, sqlcount.json), for tests: every test that reads a JSON output
// checks it here, so a document and its published schema cannot drift
// apart.
package schematest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

// Dir is the directory of the schemas: docs/schema of the module.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "schema")
}

// Schema compiles docs/schema/NAME.json (NAME: run, comparison, inspect,
// ca or sqlcount), with the schemas it refers to.
func Schema(name string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[name]; ok {
		return s, nil
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	s, err := c.Compile(filepath.Join(Dir(), name+".json"))
	if err != nil {
		return nil, err
	}
	compiled[name] = s
	return s, nil
}

// Validate checks doc, one JSON document, against the schema NAME.
func Validate(name string, doc []byte) error {
	s, err := Schema(name)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	return s.Validate(v)
}

// Check fails t unless doc is valid under the schema NAME.
func Check(t testing.TB, name string, doc []byte) {
	t.Helper()
	if err := Validate(name, doc); err != nil {
		t.Errorf("the JSON does not match docs/schema/%s.json: %v\n%.2000s", name, err, doc)
	}
}
