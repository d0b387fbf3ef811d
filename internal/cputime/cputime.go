// Package cputime reads CPU time: this process's (Self), for benchmarks
// that report CPU per operation, and a process tree's (Tree), for the CPU a
// build replay started spends per request. On a machine shared with other
// work it is steadier than wall time.
package cputime

import (
	"syscall"
	"time"
)

// Self returns the CPU time the process has used so far, user and system
// (0 if the system cannot tell, which getrusage on this process never does).
func Self() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
