package cputime

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
)

// Tree returns the CPU time, user and system, that the process pid and its
// descendants have used so far: for every live process of the tree (pid's
// descendants by parent, and the members of pid's process group, which
// keeps a child that outlived its parent and was re-parented) its own time
// plus that of the children it has reaped (cutime, cstime), so a child that
// ran and ended counts too. It fails when pid is not running.
//
// A process's own time is the larger of two readings of /proc, each a
// little short of the truth: its threads' run time in nanoseconds
// (task/*/schedstat; a thread that ended is missing, and the running one's
// current slice until the next scheduler tick) and its user and system time
// in clock ticks (stat; 10 ms on most systems, truncated). The children it
// reaped count in clock ticks. Slices of a load a second long hold tens of
// milliseconds of CPU time: ticks alone would move them by a tenth.
//
// A child reaped between the reading of its parent and its own may be
// counted twice or not at all: a build whose children come and go by the
// hundred a second is measured only roughly.
func Tree(pid int) (time.Duration, error) {
	procs, err := readProcs()
	if err != nil {
		return 0, err
	}
	root, ok := procs[pid]
	if !ok {
		return 0, fmt.Errorf("cpu time of process %d: not running", pid)
	}
	children := map[int][]int{}
	for p, st := range procs {
		children[st.ppid] = append(children[st.ppid], p)
	}
	in := map[int]bool{}
	var walk func(p int)
	walk = func(p int) {
		if in[p] {
			return
		}
		in[p] = true
		for _, c := range children[p] {
			walk(c)
		}
	}
	walk(pid)
	for p, st := range procs {
		if st.pgrp == root.pgrp && root.pgrp == pid {
			walk(p)
		}
	}
	tick := time.Second / time.Duration(clockTicks())
	var total time.Duration
	for p := range in {
		st := procs[p]
		total += max(threadsTime(p), time.Duration(st.own)*tick) + time.Duration(st.reaped)*tick
	}
	return total, nil
}

// threadsTime sums the run time of the live threads of process pid, from
// their schedstat (nanoseconds); zero when it cannot be read.
func threadsTime(pid int) time.Duration {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	d, err := os.Open(dir)
	if err != nil {
		return 0
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var sum time.Duration
	for _, n := range names {
		b, err := os.ReadFile(dir + "/" + n + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		if f := bytes.Fields(b); len(f) > 0 {
			ns, _ := strconv.ParseInt(string(f[0]), 10, 64)
			sum += time.Duration(ns)
		}
	}
	return sum
}

// procStat is what Tree needs of one /proc/PID/stat.
type procStat struct {
	ppid, pgrp int
	own        uint64 // utime + stime, clock ticks
	reaped     uint64 // cutime + cstime: the children it has reaped
}

// readProcs reads the stat of every process; one that ends meanwhile is
// left out.
func readProcs() (map[int]procStat, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, fmt.Errorf("cpu time: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("cpu time: read /proc: %w", err)
	}
	procs := make(map[int]procStat, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		if st, ok := parseStat(b); ok {
			procs[pid] = st
		}
	}
	return procs, nil
}

// parseStat reads the fields Tree needs of a /proc/PID/stat line. The
// command name, in parentheses, may hold spaces and parentheses: the fields
// start after the last ")".
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state): ppid is field 4, pgrp 5, utime 14 to cstime 17.
	if len(f) < 15 {
		return procStat{}, false
	}
	num := func(k int) uint64 {
		v, _ := strconv.ParseUint(string(f[k]), 10, 64)
		return v
	}
	return procStat{ppid: int(num(1)), pgrp: int(num(2)), own: num(11) + num(12), reaped: num(13) + num(14)}, true
}

// clockTicks is the unit of /proc's times per second (AT_CLKTCK from the
// auxiliary vector; 100 when it cannot be read).
var clockTicks = sync.OnceValue(func() int64 {
	const atClkTck = 17
	b, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 100
	}
	for ; len(b) >= 16; b = b[16:] {
		if binary.NativeEndian.Uint64(b) == atClkTck {
			if v := int64(binary.NativeEndian.Uint64(b[8:])); v > 0 {
				return v
			}
		}
	}
	return 100
})
