package snapshots

import "time"

// BuildCPU is the CPU time a build replay started spent under the load:
// its process tree's user and system time (the build's command and every
// process it started), read as each load slice started and ended.
type BuildCPU struct {
	// Slices are the load's slices in the order they ran.
	Slices []SliceCPU `json:"slices"`
}

// SliceCPU is the build's CPU time over one slice of its load.
type SliceCPU struct {
	// Slice is the slice's number, as the results of its load carry it
	// (Result.Slice); 0 for a load that was not sliced.
	Slice int `json:"slice"`
	// CPU is the process tree's CPU time between the slice's start and end
	// (clock ticks: 10 ms on most systems).
	CPU time.Duration `json:"cpu_ns"`
	// Wall is the slice's duration.
	Wall time.Duration `json:"wall_ns"`
}

// Total is the CPU time over every slice.
func (b *BuildCPU) Total() time.Duration {
	var t time.Duration
	for _, s := range b.Slices {
		t += s.CPU
	}
	return t
}
