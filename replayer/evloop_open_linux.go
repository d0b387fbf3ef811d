//go:build linux

package replayer

import (
	"context"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The open and as-recorded models on an event loop (evloop_linux.go). One
// loop schedules every arrival and owns the workers' connections (lvu, one
// request in flight each, at most MaxInFlight of them): at a request's
// intended start it writes the request on an idle connection, or on a new
// one while there are fewer than MaxInFlight, else the request is held until
// one is free, as dispatch and hand do on the goroutine path (open.go), with
// the same held, behind, late and stall bookkeeping. The loop waits in
// epoll_pwait2, whose timeout is a timespec: epoll_wait's milliseconds are
// too coarse for intended starts 50µs apart, and a request must never leave
// before its intended start (its latency is counted from then). One loop, not
// one per P: the schedule is one sequence of arrivals, and one loop keeps up
// with tens of thousands of requests per second.

// openSched is the open model's scheduler state on the loop.
type openSched struct {
	sch     schedule
	d       time.Duration // the call's duration; 0: bounded by iterations
	limit   int64         // the cursor's limit, or -1
	g0      int64         // the cursor at the call's start
	started time.Time     // the call's start
	n       int64         // the next arrival of the call

	job      job  // the next request, when has
	has      bool // job is set
	holding  bool // job is held: every connection is busy (c.behind is set)
	finished bool // no request is left to schedule

	idle      []*lvu    // the idle workers, the most recently idle last
	stallAt   time.Time // a request held until then is not sent (stalled)
	stalled   bool
	unblocked time.Time // when a held request last went out
}

// runOpenLoop runs the open and as-recorded models on an event loop; ok is
// false when the plan needs the goroutine path (see loopable, and a kernel
// without epoll_pwait2), which then runs it.
func (r *Replayer) runOpenLoop(ctx context.Context, p LoadPlan, sink ResultSink) (st Stats, ok bool) {
	if !r.loopable(p) || r.maxInfl <= 0 {
		return Stats{}, false
	}
	if !havePwait2() {
		r.log.Debug("replayer: open model on goroutines", "err", pwait2Err)
		return Stats{}, false
	}
	l, err := newEvLoop(r)
	if err != nil {
		r.log.Debug("replayer: open model on goroutines", "err", err)
		return Stats{}, false
	}
	d, it := p.bounds()
	limit, total := r.limit(it)
	sch := r.schedule(p)
	c := &counters{started: r.loadStart()}
	rep := startReporter(p, c, d, total)
	l.ctx, l.p, l.c, l.sink, l.limit = ctx, p, c, sink, limit
	_, l.copies = sink.(ResultCopier)
	l.open = &openSched{
		sch: sch, d: d, limit: limit, g0: r.cursor.Load(), started: c.started,
		stallAt: c.started.Add(r.openEnd(sch, d, limit, total) + r.timeout),
	}
	l.runOpen()
	r.loopServed.Add(l.served)
	rep.end()
	return c.stats(p, p.Model()), true
}

// runOpen runs the loop until no request is left to schedule and none is in
// flight (live counts the busy workers); it hands the connections left to
// the pool (closes them when ctx was canceled). The loop keeps its thread,
// with a timer slack of 1ns: the kernel would otherwise defer a wake-up by
// up to 50µs, an interval at 20,000 requests per second.
func (l *evLoop) runOpen() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if slack, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0); err == nil {
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
		defer unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(slack), 0, 0, 0)
	}
	stop := context.AfterFunc(l.ctx, l.poke)
	defer stop()
	now := time.Now()
	lastYield := now
	for {
		l.schedule(now)
		if l.open.finished && l.live == 0 {
			break
		}
		// The time again: schedule may have taken a while, and a timeout
		// from its start would wake the loop that much late.
		n, err := epollPwait2(l.epfd, l.events, l.wakeAt(), time.Now())
		l.woke(n, err, &lastYield)
		now = time.Now()
	}
	l.finish()
}

// wakeAt is when the loop must wake up: the nearest of the deadlines in
// flight, the next request's intended start (or the last of those due with
// it, wakeFor), and, while it is held, the moment it stalls. Zero: none (an
// event will come).
func (l *evLoop) wakeAt() time.Time {
	var at time.Time
	if l.head != nil {
		at = l.head.deadline
	}
	if o := l.open; o.has && !o.finished {
		t := o.stallAt
		if !o.holding {
			t = o.wakeFor(l.r)
		}
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

// openBatch is how late a request may leave so that the loop wakes once for
// it and the next: at 20,000 requests per second the loop would otherwise
// wake every 50µs for one request, and waking (a context switch) is most of
// what a request costs it. The lateness is latency counted from the
// intended start, within the open model's goal (0.1ms added at the median).
const openBatch = 50 * time.Microsecond

// wakeFor is when the loop wakes for the next request: at the intended
// start of the last of the requests due within openBatch of its own (at
// most openBatchMax of them, fewer near a limit of iterations). The later
// ones' starts are only peeked at (a shard's next arrival may be another
// one): a request never leaves before its own intended start.
func (o *openSched) wakeFor(r *Replayer) time.Time {
	t := o.job.intended
	left := int64(openBatchMax)
	if o.limit >= 0 {
		left = min(left, o.limit-r.cursor.Load())
	}
	for n := o.n; n < o.n+left; n++ {
		off := o.sch.offset(n, o.g0+n)
		next := o.started.Add(off)
		if (o.d > 0 && off >= o.d) || next.Sub(o.job.intended) > openBatch {
			break
		}
		t = next
	}
	return t
}

// openBatchMax bounds the requests the loop wakes for at once.
const openBatchMax = 8

// schedule starts every request whose intended start has come, while a
// worker can take it, as dispatch does.
func (l *evLoop) schedule(now time.Time) {
	o, r := l.open, l.r
	for !o.finished {
		if l.ctx.Err() != nil {
			o.finish(l.c)
			return
		}
		if !o.has && !o.nextJob(r) {
			return
		}
		if o.stalled {
			r.notSent(l.c, l.p, o.job, l.sink)
			o.has = false
			continue
		}
		if now.Before(o.job.intended) {
			return
		}
		if !l.hand(now) {
			return
		}
		o.has = false
		now = time.Now()
	}
}

// nextJob takes the call's next request, or reports false when none is
// left (the duration or the cursor's limit is reached).
func (o *openSched) nextJob(r *Replayer) bool {
	if o.limit >= 0 && r.cursor.Load() >= o.limit {
		o.finished = true
		return false
	}
	n := r.ownArrival(o.n, o.g0)
	off := o.sch.offset(n, o.g0+n)
	if o.d > 0 && off >= o.d {
		r.endCall(o.sch, o.g0, n, o.d)
		o.finished = true
		return false
	}
	g, ok := r.claim(o.limit)
	if !ok {
		o.finished = true
		return false
	}
	o.n = n + 1
	o.job = job{t: o.sch.pick(g), g: g, intended: o.started.Add(off)}
	o.job.held = o.job.intended.Before(o.unblocked)
	o.has = true
	return true
}

// finish ends the schedule: the request waiting, if any, is dropped (the
// run was canceled).
func (o *openSched) finish(c *counters) {
	o.finished, o.has = true, false
	if o.holding {
		o.holding = false
		c.behind.Store(0)
	}
}

// hand sends the next request on an idle worker, or on a new one while
// there are fewer than MaxInFlight; else the request is held, and reports
// false, until a worker is free or the run's end plus the timeout, when it
// and every later request are not sent (stalled), as hand does on the
// goroutine path.
func (l *evLoop) hand(now time.Time) bool {
	o := l.open
	v := l.worker(now)
	if v == nil {
		if !o.holding {
			// Every worker is busy: the target is falling behind.
			o.holding, o.job.held = true, true
			l.c.behind.Store(o.job.intended.UnixNano())
		}
		if now.Before(o.stallAt) {
			return false
		}
		o.stalled = true
		l.r.notSent(l.c, l.p, o.job, l.sink)
		o.unblock(l.c, time.Now())
		return true
	}
	if o.holding {
		o.unblock(l.c, now)
	}
	l.startJob(v, o.job)
	return true
}

// unblock ends the holding of a request at now.
func (o *openSched) unblock(c *counters, now time.Time) {
	o.holding = false
	o.unblocked = now
	c.behind.Store(0)
}

// worker takes an idle worker, the most recently idle, or adds one while
// there are fewer than MaxInFlight (with an idle connection of the pool when
// there is one); nil when every one is busy. The worker is counted busy.
func (l *evLoop) worker(now time.Time) *lvu {
	o := l.open
	if n := len(o.idle); n > 0 {
		v := o.idle[n-1]
		o.idle = o.idle[:n-1]
		l.live++
		return v
	}
	if len(l.vus) >= l.r.maxInfl {
		return nil
	}
	l.r.adopt(l, now) // counts it live
	return l.vus[len(l.vus)-1]
}

// startJob starts j on the busy worker v: counted in flight, late when it
// was held.
func (l *evLoop) startJob(v *lvu, j job) {
	r := l.r
	res := l.result(v, j.intended)
	l.c.enter()
	if j.held {
		l.c.sentLate(time.Since(j.intended))
	}
	switch {
	case j.t.readErr != nil:
		r.send(l.ctx, nil, j.t, res) // no connection: it fills in the error
		l.c.leave()
		emit(l.c, l.p, res, l.sink)
		l.free(v)
		return
	case j.t.h2 != nil:
		l.away(v, j.g, j.t, res)
		return
	}
	l.start(v, j.t, res, time.Now())
}

// free makes v, whose request ended, idle.
func (l *evLoop) free(v *lvu) {
	v.state = vuIdle
	l.live--
	l.open.idle = append(l.open.idle, v)
}

// epollPwait2 waits for events on epfd until at (zero: no timeout), now
// being the time.
func epollPwait2(epfd int, events []syscall.EpollEvent, at, now time.Time) (int, error) {
	var ts *unix.Timespec
	if !at.IsZero() {
		t := unix.NsecToTimespec(int64(max(at.Sub(now), 0)))
		ts = &t
	}
	n, _, errno := syscall.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])),
		uintptr(len(events)), uintptr(unsafe.Pointer(ts)), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(n), nil
}

// havePwait2 reports whether the kernel has epoll_pwait2 (Linux 5.11 on).
func havePwait2() bool {
	pwait2Once.Do(func() {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return
		}
		defer syscall.Close(epfd)
		ev := make([]syscall.EpollEvent, 1)
		now := time.Now()
		_, err = epollPwait2(epfd, ev, now, now)
		pwait2OK = err == nil
		if err != nil {
			pwait2Err = os.NewSyscallError("epoll_pwait2", err)
		}
	})
	return pwait2OK
}

var (
	pwait2Once sync.Once
	pwait2OK   bool
	pwait2Err  error
)
