package cputime

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"time"
)

// Machine returns the time every CPU of the machine has spent busy so far,
// summed (user, nice, system, irq, softirq and steal in /proc/stat's first
// line; clock ticks): over an interval, how much of the machine was in use,
// by any process, or taken by the hypervisor.
func Machine() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system (idle iowait) irq softirq steal
		v, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return 0, errors.New("/proc/stat: bad cpu line")
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / time.Duration(clockTicks()), nil
}
