package report

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/replaykit/replay/internal/schematest"
	"github.com/replaykit/replay/snapshots"
)

// TestJSONMatchesSchemas: every JSON document of every fixture matches its
// schema in docs/schema/ and carries schema_version.
func TestJSONMatchesSchemas(t *testing.T) {
	runs := map[string]*RunReport{"run": runFixture(t), "crashed": crashedFixture(t), "check": checkFixture(t)}
	for name, r := range runs {
		var b bytes.Buffer
		if err := RunJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { schematest.Check(t, "run", b.Bytes()) })
	}
	comparisons := map[string]*ComparisonReport{"comparison": comparisonFixture(t), "unchanged": unchangedFixture(t), "miswired": miswiredFixture(t),
		"upstream": upstreamFixture(t), "behaviour": behaviourFixture(t), "many": manyEndpoints(t, 50, 8, 0), "setaside": setAsideFixture(t)}
	for name, r := range comparisons {
		var b bytes.Buffer
		if err := ComparisonJSON(&b, r); err != nil {
			t.Fatal(err)
		}
		t.Run(name, func(t *testing.T) { schematest.Check(t, "comparison", b.Bytes()) })
	}
	raw, err := os.ReadFile("testdata/inventory.json")
	if err != nil {
		t.Fatal(err)
	}
	var inv snapshots.Inventory
	if err := json.Unmarshal(raw, &inv); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := InventoryJSON(&b, &inv); err != nil {
		t.Fatal(err)
	}
	schematest.Check(t, "inspect", b.Bytes())
	b.Reset()
	if err := InventoryJSON(&b, &snapshots.Inventory{}); err != nil { // an empty snapshot
		t.Fatal(err)
	}
	schematest.Check(t, "inspect", b.Bytes())
}
