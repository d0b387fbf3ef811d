package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/replaykit/replay/internal/golden"

	"github.com/google/go-cmp/cmp"

	"github.com/replaykit/replay/snapshots"
)

func TestInventoryTextGolden(t *testing.T) {
	// inventory.json is what replay inspect --format json printed for the
	// CLI's orders fixture.
	b, err := os.ReadFile("testdata/inventory.json")
	if err != nil {
		t.Fatal(err)
	}
	var inv snapshots.Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := InventoryText(&got, &inv); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "inventory.txt.golden", got.Bytes())
}

func TestInventoryTextEmpty(t *testing.T) {
	inv := &snapshots.Inventory{Path: "empty.snap", Capture: snapshots.CaptureStats{InboundSeen: 3}}
	var got bytes.Buffer
	if err := InventoryText(&got, inv); err != nil {
		t.Fatal(err)
	}
	want := "snapshot empty.snap: 0 exchanges (0 inbound, 0 outbound), 0 SQL statements\n" +
		"captured: inbound 0 of 3 seen, outbound 0 of 0 seen, 0 statements\n"
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("InventoryText (-want +got):\n%s", diff)
	}
	one := &snapshots.Inventory{Path: "one.snap", Exchanges: 1, Inbound: 1, Statements: 1, Capture: snapshots.CaptureStats{InboundSeen: 1, InboundRecorded: 1, Statements: 1}}
	got.Reset()
	if err := InventoryText(&got, one); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"snapshot one.snap: 1 exchange (1 inbound, 0 outbound), 1 SQL statement\n", "captured: inbound 1 of 1 seen, outbound 0 of 0 seen, 1 statement\n"} {
		if !strings.Contains(got.String(), want) {
			t.Errorf("InventoryText of one exchange lacks %q:\n%s", want, got.String())
		}
	}
}
