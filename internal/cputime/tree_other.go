//go:build !linux

package cputime

import (
	"errors"
	"time"
)

// Tree returns the CPU time of the process pid and its descendants; only
// Linux can tell (it reads /proc): elsewhere it fails.
func Tree(pid int) (time.Duration, error) {
	return 0, errors.New("cpu time of a process tree: only Linux can tell")
}
