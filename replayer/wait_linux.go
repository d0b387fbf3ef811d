//go:build linux

package replayer

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// canSleepPrecisely reports whether sleepPrecisely may be used: with a
// single P, the P it holds during the sleep would be the only one, and
// responses would wait for the sleep to end.
func canSleepPrecisely() bool { return runtime.GOMAXPROCS(0) > 1 }

// sleepPrecisely sleeps d with nanosleep (an hrtimer) on the calling thread,
// with the thread's timer slack (50µs by default, by which the kernel may
// defer a wake-up to batch it with others) cut to 1ns for the sleep. It
// blocks the thread, not the process: no CPU is spent waiting, and the Go
// runtime runs other goroutines on its other Ps meanwhile.
func sleepPrecisely(d time.Duration) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		return err
	}
	defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0)
	ts := unix.NsecToTimespec(int64(d))
	for {
		// On a signal, nanosleep leaves the time still to sleep in ts.
		if err := unix.Nanosleep(&ts, &ts); err != unix.EINTR {
			return err
		}
	}
}
