//go:build !linux

package app

import "time"

// threadCPU is the calling thread's CPU time; on this system replay's demo
// does not read it (false), and a burn runs by the wall clock.
func threadCPU() (time.Duration, bool) { return 0, false }
