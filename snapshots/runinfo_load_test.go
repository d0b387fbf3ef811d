package snapshots

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunInfoLoadSQL: the explain weights and the load's SQL given to Close
// come back from OpenRun; a run closed without them reads them as nil.
func TestRunInfoLoadSQL(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	load := &LoadSQL{Statements: 2080, Total: 91 * time.Millisecond, Fingerprints: []LoadFingerprint{
		{Fingerprint: "SELECT * FROM books WHERE author_id = ?", Count: 2000, Total: 90 * time.Millisecond},
		{Fingerprint: "SELECT 1", Count: 80, Total: time.Millisecond},
	}}
	weights := map[int64]float64{3: 7, 9: 2.5}
	for _, tc := range []struct {
		name    string
		weights map[int64]float64
		load    *LoadSQL
	}{{"with", weights, load}, {"without", nil, nil}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".run")
			w, err := CreateRun(path, RunInfo{Name: "b", Started: started, ExplainWeights: tc.weights})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(RunInfo{Ended: started.Add(time.Second), LoadSQL: tc.load}); err != nil {
				t.Fatal(err)
			}
			r, err := OpenRun(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if diff := cmp.Diff(tc.weights, r.Info().ExplainWeights); diff != "" {
				t.Errorf("explain weights (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.load, r.Info().LoadSQL); diff != "" {
				t.Errorf("load sql (-want +got):\n%s", diff)
			}
		})
	}
}
