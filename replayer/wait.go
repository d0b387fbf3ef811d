package replayer

import (
	"context"
	"runtime"
	"time"
)

// Waiting for an intended start. A Go timer may fire up to a millisecond
// late while the process is idle: the runtime's netpoller rounds a shorter
// sleep up to one millisecond (runtime/netpoll_epoll.go), which at 2,000
// requests per second is two intervals. A waiter sleeps the last stretch
// precisely instead, where it can (sleepPrecisely), without spinning.

// preciseTail is how much of a wait a waiter leaves to the precise sleep: a
// Go timer takes it to preciseTail before the instant (it may fire a
// millisecond late), the precise sleep the rest. The precise sleep holds a
// thread, and its P, for at most that long.
const preciseTail = 1500 * time.Microsecond

// yieldEvery is how often a waiter that only sleeps precisely yields its
// thread. A goroutine that sleeps in system calls and never parks looks to
// the Go runtime like one running without a break: after 10ms its monitor
// takes the P away while the goroutine sleeps, and then watches the process
// closely for a while, which costs CPU and delays the next wake-up.
const yieldEvery = 2 * time.Millisecond

// waiter waits until an instant. It belongs to one goroutine.
type waiter struct {
	precise bool // sleepPrecisely works here
	coarse  *time.Timer
	yielded time.Time // when the goroutine last went through the Go scheduler
}

func newWaiter() *waiter {
	return &waiter{precise: canSleepPrecisely()}
}

// until returns at t, or as soon as ctx is canceled; it reports whether ctx
// is still live. The precise sleep at the end, under preciseTail, does not
// watch ctx.
func (w *waiter) until(ctx context.Context, t time.Time) bool {
	for {
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(t)
		switch {
		case d <= 0:
			return true
		case !w.precise:
			if !w.sleep(ctx, d) {
				return false
			}
		case d > preciseTail:
			if !w.sleep(ctx, d-preciseTail) {
				return false
			}
		case d > preciseTail/4 && time.Since(w.yielded) > yieldEvery:
			runtime.Gosched()
			w.yielded = time.Now()
		default:
			if sleepPrecisely(d) != nil {
				w.precise = false
			}
		}
	}
}

// sleep waits d with a Go timer, or until ctx is canceled.
func (w *waiter) sleep(ctx context.Context, d time.Duration) bool {
	if w.coarse == nil {
		w.coarse = time.NewTimer(d)
	} else {
		w.coarse.Reset(d)
	}
	select {
	case <-ctx.Done():
		w.coarse.Stop()
		return false
	case <-w.coarse.C:
		w.yielded = time.Now()
		return true
	}
}
