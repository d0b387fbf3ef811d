package snapshots

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRunInfoBuildCPU: the build's CPU time per slice given to Close comes
// back from OpenRun; a run closed without it reads it as nil.
func TestRunInfoBuildCPU(t *testing.T) {
	dir := t.TempDir()
	started := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	cpu := &BuildCPU{Slices: []SliceCPU{{Slice: 1, CPU: 310 * time.Millisecond, Wall: time.Second}, {Slice: 2, CPU: 290 * time.Millisecond, Wall: time.Second}}}
	for _, tc := range []struct {
		name string
		cpu  *BuildCPU
	}{{"with", cpu}, {"without", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+".run")
			w, err := CreateRun(path, RunInfo{Name: "b", Started: started})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(RunInfo{Ended: started.Add(time.Second), BuildCPU: tc.cpu}); err != nil {
				t.Fatal(err)
			}
			r, err := OpenRun(path)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if diff := cmp.Diff(tc.cpu, r.Info().BuildCPU); diff != "" {
				t.Errorf("build cpu (-want +got):\n%s", diff)
			}
		})
	}
	if got := cpu.Total(); got != 600*time.Millisecond {
		t.Errorf("Total = %s, want 600ms", got)
	}
}
