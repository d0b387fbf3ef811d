package session

import (
	"fmt"
	"sync"
	"time"

	"github.com/replaykit/replay/internal/cputime"
	"github.com/replaykit/replay/snapshots"
)

// buildCPU reads the CPU time of a build replay started (its process
// tree: cputime.Tree) as each load call starts and ends, so that the
// explain phase, warm-ups and resets stay out.
type buildCPU struct {
	pid int
	// numbered: the load calls are the slices of an interleaved load,
	// numbered from 1 in the order they run (replayer.Compare runs a
	// side's slices in order); else every call is slice fixed.
	numbered bool
	fixed    int

	mu     sync.Mutex
	slices []snapshots.SliceCPU
	calls  int
	err    error // the first reading that failed: the figures are then dropped
}

// measure reads the tree's CPU time now and returns the function that
// records the slice's when the load call ends.
func (b *buildCPU) measure() func() {
	b.mu.Lock()
	b.calls++
	slice := b.fixed
	if b.numbered {
		slice = b.calls
	}
	b.mu.Unlock()
	start := time.Now()
	before, err := cputime.Tree(b.pid)
	return func() {
		after, err2 := cputime.Tree(b.pid)
		b.mu.Lock()
		defer b.mu.Unlock()
		if err = firstErr(err, err2); err != nil {
			if b.err == nil {
				b.err = fmt.Errorf("slice %d: %w", slice, err)
			}
			return
		}
		b.slices = append(b.slices, snapshots.SliceCPU{Slice: slice, CPU: max(after-before, 0), Wall: time.Since(start)})
	}
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// result is what was measured; nil when nothing was, or when a reading
// failed (the build ended mid-load, a system without /proc): a figure
// missing slices would not compare.
func (b *buildCPU) result() (*snapshots.BuildCPU, error) {
	if b == nil {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return nil, fmt.Errorf("CPU time of the build not measured: %w", b.err)
	}
	if len(b.slices) == 0 {
		return nil, nil
	}
	return &snapshots.BuildCPU{Slices: append([]snapshots.SliceCPU(nil), b.slices...)}, nil
}

// recordCPU puts the build's CPU time in the run info, warning when a
// reading failed.
func (s *Side) recordCPU() {
	cpu, err := s.cpu.result()
	if err != nil && s.cfg.Warn != nil {
		s.cfg.Warn(s.wrap(err))
	}
	s.info.BuildCPU = cpu
}

// sliceCPU says how the side's load calls are numbered: from 1 in the
// order they run (the slices of an interleaved comparison), or each fixed.
func (s *Side) sliceCPU(numbered bool, fixed int) {
	if s.cpu != nil {
		s.cpu.numbered, s.cpu.fixed = numbered, fixed
	}
}
