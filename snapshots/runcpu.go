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
	// Replay is replay's own CPU time over the slice (the load generator,
	// the SQL counter, the mocks), and Machine the time the machine's CPUs
	// were busy, by any process, or stolen (clock ticks): how much fixed
	// work cost and how busy the machine was while the build ran, for
	// comparing CPU per request beside other work. Zero when not read
	// (files from before).
	Replay  time.Duration `json:"replay_cpu_ns,omitempty"`
	Machine time.Duration `json:"machine_busy_ns,omitempty"`
}

// Total is the CPU time over every slice.
func (b *BuildCPU) Total() time.Duration {
	var t time.Duration
	for _, s := range b.Slices {
		t += s.CPU
	}
	return t
}
