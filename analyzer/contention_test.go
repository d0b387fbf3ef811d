package analyzer

import (
	"strings"
	"testing"
)

// TestContentionNote: two builds loaded at once that together keep most of
// a 2-CPU machine busy get the note; at a light load, or interleaved, none.
func TestContentionNote(t *testing.T) {
	for _, tc := range []struct {
		name   string
		order  string
		perReq float64 // µs of CPU per request; 200 requests per 1 s slice
		want   bool
	}{
		{"concurrent, busy", "concurrent", 4500, true},
		{"concurrent, light", "concurrent", 300, false},
		{"interleaved, busy", "interleaved", 4500, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := cpuRun(t, runSpec{name: "baseline", n: 2000, slices: 10, seed: 1, jitter: 0.4, driftSeed: 1}, cpuEndpoints, tc.perReq, 0.05, 0.02, 1)
			cand := cpuRun(t, runSpec{name: "candidate", n: 2000, slices: 10, seed: 2, jitter: 0.4, driftSeed: 1}, cpuEndpoints, tc.perReq, 0.05, 0.02, 1)
			for _, s := range []*Summary{base, cand} {
				s.Info.Settings = map[string]string{SettingOrder: tc.order, SettingCPUs: "2"}
			}
			c := mustCompare(t, base, cand, CompareOptions{})
			var note string
			for _, n := range c.Notes {
				if strings.Contains(n, "loaded at once") {
					note = n
				}
			}
			if (note != "") != tc.want {
				t.Errorf("note %q, want one: %v (notes %q)", note, tc.want, c.Notes)
			}
			if tc.want && !strings.Contains(note, "machine's 2 CPUs busy in 10 of 10 slice pairs") {
				t.Errorf("note %q: want the CPUs and the pairs named", note)
			}
		})
	}
}
