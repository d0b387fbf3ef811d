package sqlcore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/schematest"

	"github.com/google/go-cmp/cmp"
)

var statsFixture = Stats{
	Statements: 1205,
	Fingerprints: []FingerprintStats{
		{Fingerprint: "SELECT * FROM orders WHERE id = ?", Count: 1200, Total: 1500 * time.Millisecond, Mean: 1250 * time.Microsecond},
		{Fingerprint: "BEGIN", Count: 4, Total: 2 * time.Millisecond, Mean: 500 * time.Microsecond},
		{Fingerprint: "", Count: 1, Total: 1500 * time.Nanosecond, Mean: 1500 * time.Nanosecond},
	},
}

func TestStatsWriteTable(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   Stats
		want string
	}{
		{"fingerprints", statsFixture, `
1205 statements, 3 fingerprints
  COUNT  TOTAL ms  MEAN ms  FINGERPRINT
   1200  1500.000    1.250  SELECT * FROM orders WHERE id = ?
      4     2.000    0.500  BEGIN
      1     0.002    0.002  (empty query)
`},
		{"none", Stats{}, "\n0 statements, 0 fingerprints\n"},
		{"one", Stats{Statements: 1, Fingerprints: []FingerprintStats{{Fingerprint: "BEGIN", Count: 1}}}, `
1 statement, 1 fingerprint
  COUNT  TOTAL ms  MEAN ms  FINGERPRINT
      1     0.000    0.000  BEGIN
`},
		{"errors", Stats{Statements: 2, Errors: 3, Fingerprints: []FingerprintStats{
			{Fingerprint: "INSERT INTO orders (id) VALUES (?)", Count: 2, Errors: 1, Total: 3 * time.Millisecond, Mean: 1500 * time.Microsecond},
			{Fingerprint: "SELEC ?", Errors: 2},
		}}, `
2 statements (and 3 the server rejected), 2 fingerprints
  COUNT  ERRORS  TOTAL ms  MEAN ms  FINGERPRINT
      2       1     3.000    1.500  INSERT INTO orders (id) VALUES (?)
      0       2     0.000    0.000  SELEC ?
`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.st.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("WriteTable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatsWriteJSON(t *testing.T) {
	for _, tt := range []struct {
		name string
		st   Stats
		want string
	}{
		{"fingerprints", statsFixture, `{
  "schema_version": 1,
  "statements": 1205,
  "errors": 0,
  "fingerprints": [
    {
      "fingerprint": "SELECT * FROM orders WHERE id = ?",
      "count": 1200,
      "errors": 0,
      "total_ms": 1500,
      "mean_ms": 1.25
    },
    {
      "fingerprint": "BEGIN",
      "count": 4,
      "errors": 0,
      "total_ms": 2,
      "mean_ms": 0.5
    },
    {
      "fingerprint": "",
      "count": 1,
      "errors": 0,
      "total_ms": 0.0015,
      "mean_ms": 0.0015
    }
  ]
}
`},
		// An empty list, not null, so that readers can iterate.
		{"none", Stats{}, "{\n  \"schema_version\": 1,\n  \"statements\": 0,\n  \"errors\": 0,\n  \"fingerprints\": []\n}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.st.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("WriteJSON (-want +got):\n%s", diff)
			}
			schematest.Check(t, "sqlcount", b.Bytes())
			path := filepath.Join(t.TempDir(), "counts.json")
			if err := tt.st.WriteJSONFile(path); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("WriteJSONFile (-want +got):\n%s", diff)
			}
		})
	}
}

func TestStatsWriteJSONFileError(t *testing.T) {
	err := statsFixture.WriteJSONFile(filepath.Join(t.TempDir(), "missing", "counts.json"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteJSONFile into a missing directory: err = %v, want one wrapping fs.ErrNotExist", err)
	}
}
