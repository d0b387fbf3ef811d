package cputime

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// startTree starts script under /bin/sh in its own process group, as
// replay starts a build, and kills the group when the test ends.
func startTree(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return pid
}

// ownTime is the process's own CPU time, its children's left out.
func ownTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	procs, err := readProcs()
	if err != nil {
		t.Fatal(err)
	}
	st, ok := procs[pid]
	if !ok {
		t.Fatalf("process %d not running", pid)
	}
	return time.Duration(st.own) * time.Second / time.Duration(clockTicks())
}

// TestTreeCountsLiveChild: a parent that waits while a grandchild spins
// (a child of its child): the tree's CPU time grows by the grandchild's,
// far above the parent's own.
func TestTreeCountsLiveChild(t *testing.T) {
	pid := startTree(t, `sh -c 'while :; do :; done' & wait`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := Tree(pid)
		if err != nil {
			t.Fatal(err)
		}
		if got >= 300*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Tree = %s after 30s of a spinning child; want at least 300ms", got)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if own := ownTime(t, pid); own > 50*time.Millisecond {
		t.Fatalf("the parent itself used %s: the test cannot tell the child's time from it", own)
	}
}

// TestTreeCountsReapedChild: a child that spun and ended, reaped by its
// parent, still counts (the parent's cutime and cstime).
func TestTreeCountsReapedChild(t *testing.T) {
	done := filepath.Join(t.TempDir(), "done")
	pid := startTree(t, `timeout 1 sh -c 'while :; do :; done'; touch `+done+`; sleep 30`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the spinning child did not end within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, err := Tree(pid)
	if err != nil {
		t.Fatal(err)
	}
	if got < 100*time.Millisecond {
		t.Fatalf("Tree = %s after a child spun for a second and was reaped; want its time counted", got)
	}
	if own := ownTime(t, pid); own > got/4 {
		t.Fatalf("the parent itself used %s of %s: the test cannot tell the child's time from it", own, got)
	}
}

// TestTreeNotRunning: a process that is not running is an error, not zero.
func TestTreeNotRunning(t *testing.T) {
	cmd := exec.Command("/bin/true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := Tree(cmd.Process.Pid); err == nil {
		t.Fatal("Tree of a process that ended: no error")
	}
}

// TestParseStat: a command name with spaces and parentheses.
func TestParseStat(t *testing.T) {
	line := "4242 (my (odd) app) S 17 4242 4242 0 -1 4194560 10 0 0 0 150 25 7 3 20 0 1 0 1 1 1\n"
	st, ok := parseStat([]byte(line))
	if !ok || st.ppid != 17 || st.pgrp != 4242 || st.own != 175 || st.reaped != 10 {
		t.Fatalf("parseStat = %+v, %v; want ppid 17, pgrp 4242, 175 own ticks and 10 reaped", st, ok)
	}
}

// TestTreeFinerThanTicks: a process's own time comes in nanoseconds (its
// threads' schedstat), not in whole clock ticks, so that a slice of load
// holding a few ticks of CPU time is measured, not rounded.
func TestTreeFinerThanTicks(t *testing.T) {
	done := filepath.Join(t.TempDir(), "done")
	pid := startTree(t, `i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done; : > `+done+`; exec sleep 30`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(done); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the loop did not end within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // until sleep has replaced the shell
	got, err := Tree(pid)
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Second / time.Duration(clockTicks())
	if got <= 0 || got%tick == 0 {
		t.Fatalf("Tree = %s: a whole number of %s ticks; want nanoseconds", got, tick)
	}
}
