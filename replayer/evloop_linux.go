//go:build linux

package replayer

import (
	"context"
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/replaykit/replay/internal/rawsock"
	"github.com/replaykit/replay/snapshots"
)

// An event loop of the closed model (evloop_closed_linux.go; the open and
// as-recorded models run on one too, evloop_open_linux.go): it owns the
// connections of some virtual users as raw non-blocking sockets in its own
// epoll set, writes a user's next request as soon as its previous answer is
// complete, and keeps the requests' deadlines itself (epoll_wait waits at
// most until the nearest). Per request: one write, one read (more for an
// answer bigger than a read) and a share of one epoll_wait; no goroutine
// parks or wakes. Dialing, and a request recorded over HTTP/2, are done by
// a goroutine that hands the user back (wake, an eventfd).

// vu states.
const (
	vuIdle    = iota // between requests
	vuDialing        // a goroutine dials its connection
	vuWriting        // its request is being written
	vuReading        // its answer is being read
	vuAway           // a goroutine sends its request (HTTP/2)
	vuDone           // it ended
)

// loopYieldEvery is how often a busy loop yields: below the runtime's 10ms
// preemption period (as the SQL counter's relay does).
const loopYieldEvery = 8 * time.Millisecond

// lvu is a virtual user on an event loop.
type lvu struct {
	idx    int32
	gen    int32 // its connection's generation: events of an earlier one are stale
	fd     int   // -1: no connection
	laddr  net.Addr
	raddr  net.Addr
	reused bool      // the connection carried a request already
	idle   time.Time // when its last request was sent
	state  int
	events uint32 // the epoll events asked for

	// The request in flight.
	t        *template
	lr       *snapshots.Result // its result; reused once handed over when the sink copies results
	res      *snapshots.Result
	out      outgoing
	tap      *bodyTap
	deadline time.Time
	attempt  int
	wbuf     []byte
	woff     int
	p        respParser
	rbuf     []byte
	rr, rw   int // rbuf[rr:rw]: read, not taken by the parser yet
	tapBuf   bodyTap

	prev, next *lvu // in the loop's deadline queue
	queued     bool

	// Set by the goroutine that had it.
	dialFd       int
	dialErr      error
	awayCanceled bool
}

// evLoop runs the requests of its virtual users on one goroutine.
type evLoop struct {
	r    *Replayer
	ctx  context.Context
	p    LoadPlan
	c    *counters
	sink ResultSink
	// copies: sink is a ResultCopier, so a handed-over result is reused.
	copies bool
	end    time.Time // no request starts from then on; zero: none
	limit  int64

	epfd   int
	wake   int // an eventfd: a goroutine handed a user back, or ctx ended
	vus    []*lvu
	live   int
	events []syscall.EpollEvent
	head   *lvu // the deadline queue, nearest first
	tail   *lvu

	// open is the schedule of the open and as-recorded models
	// (evloop_open_linux.go); nil in the closed model.
	open *openSched

	mu       sync.Mutex
	back     []*lvu // handed back by goroutines
	canceled bool
	shut     bool  // the loop's descriptors are closed
	served   int64 // requests completed on the loop
}

func newEvLoop(r *Replayer) (*evLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		syscall.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: -1}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, wake, &ev); err != nil {
		syscall.Close(epfd)
		syscall.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &evLoop{r: r, epfd: epfd, wake: wake, events: make([]syscall.EpollEvent, 128)}, nil
}

// addVU adds a virtual user with connection fd (-1: none yet).
func (l *evLoop) addVU(fd int, laddr, raddr net.Addr, reused bool, idle time.Time) error {
	v := &lvu{idx: int32(len(l.vus)), fd: -1, rbuf: make([]byte, loopReadSize)}
	l.vus = append(l.vus, v)
	l.live++
	if fd >= 0 {
		v.laddr, v.raddr, v.reused, v.idle = laddr, raddr, reused, idle
		return l.attach(v, fd)
	}
	return nil
}

// attach makes fd v's connection, in the loop's epoll set.
func (l *evLoop) attach(v *lvu, fd int) error {
	v.gen++
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: v.idx, Pad: v.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		syscall.Close(fd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	v.fd, v.events = fd, syscall.EPOLLIN
	return nil
}

// closeConn closes v's connection, if any.
func (l *evLoop) closeConn(v *lvu) {
	if v.fd < 0 {
		return
	}
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, v.fd, nil)
	syscall.Close(v.fd)
	v.fd = -1
	v.reused = false
}

// run runs the loop until every user has ended; it hands the connections
// left to the pool (closes them when ctx was canceled).
func (l *evLoop) run() {
	stop := context.AfterFunc(l.ctx, l.poke)
	defer stop()
	now := time.Now()
	for _, v := range l.vus {
		l.next(v, now)
	}
	lastYield := now
	for l.live > 0 {
		n, err := l.wait(now)
		now = l.woke(n, err, &lastYield)
	}
	l.finish()
}

// woke handles what a wait returned, n events or err, and the requests
// past their deadline, yielding to the scheduler every loopYieldEvery
// (lastYield); it returns the time the wait ended.
func (l *evLoop) woke(n int, err error, lastYield *time.Time) time.Time {
	now := time.Now()
	if err != nil && err != syscall.EINTR {
		// Not expected with valid arguments: do not spin.
		time.Sleep(time.Millisecond)
	}
	if now.Sub(*lastYield) >= loopYieldEvery {
		runtime.Gosched()
		*lastYield = now
	}
	for _, ev := range l.events[:max(n, 0)] {
		l.event(ev)
	}
	l.expire(now)
	return now
}

// wait waits for events, until the nearest deadline.
func (l *evLoop) wait(now time.Time) (int, error) {
	return syscall.EpollWait(l.epfd, l.events, l.waitMs(now))
}

// waitMs is epoll_wait's timeout: until the nearest deadline, or none.
func (l *evLoop) waitMs(now time.Time) int {
	if l.head == nil {
		return -1
	}
	d := l.head.deadline.Sub(now)
	if d <= 0 {
		return 0
	}
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

func (l *evLoop) event(ev syscall.EpollEvent) {
	if ev.Fd < 0 {
		l.woken()
		return
	}
	v := l.vus[ev.Fd]
	if ev.Pad != v.gen || v.fd < 0 {
		return // an earlier connection's
	}
	switch v.state {
	case vuWriting:
		l.write(v)
	case vuReading:
		l.read(v)
	default:
		// Bytes or a close nobody asked for: the server closed the
		// connection, or it is out of step.
		l.closeConn(v)
	}
}

// next starts v's next request, or ends v; in the open model, where the
// scheduler starts requests, it makes v idle.
func (l *evLoop) next(v *lvu, now time.Time) {
	if l.open != nil {
		l.free(v)
		return
	}
	r := l.r
	for {
		v.state = vuIdle
		if l.ctx.Err() != nil || (!l.end.IsZero() && !now.Before(l.end)) {
			l.retire(v)
			return
		}
		g, ok := r.claim(l.limit)
		if !ok {
			l.retire(v)
			return
		}
		t := r.seq.at(int(g % int64(r.seq.len())))
		res := l.result(v, now)
		l.c.enter()
		switch {
		case t.readErr != nil:
			r.send(l.ctx, nil, t, res) // no connection: it fills in the error
			l.c.leave()
			emit(l.c, l.p, res, l.sink)
			now = time.Now()
			continue
		case t.h2 != nil:
			l.away(v, g, t, res)
			return
		}
		l.start(v, t, res, now)
		return
	}
}

// result returns the result of v's next request, intended at intended:
// v's last one, handed over already, when the sink copies results, else a
// new one.
func (l *evLoop) result(v *lvu, intended time.Time) *snapshots.Result {
	if v.lr == nil || !l.copies {
		v.lr = &snapshots.Result{}
	}
	*v.lr = snapshots.Result{Intended: intended, Phase: l.p.Phase}
	return v.lr
}

// start sends v's request t, its result res, at now.
func (l *evLoop) start(v *lvu, t *template, res *snapshots.Result, now time.Time) {
	v.t, v.res = t, res
	v.out = l.r.begin(t, res, false)
	v.tap = l.r.tapInto(&v.tapBuf, t, l.p.Phase)
	res.Sent = now
	v.deadline = now.Add(l.r.timeout)
	v.attempt = 0
	l.send(v, now)
}

// send writes v's request on its connection, dialing one first when it has
// none or the one it has went stale.
func (l *evLoop) send(v *lvu, now time.Time) {
	if v.fd >= 0 && v.reused && now.Sub(v.idle) >= time.Second && staleFd(v.fd) {
		l.closeConn(v)
	}
	if v.fd < 0 {
		l.dial(v)
		return
	}
	t := &v.t.h1
	v.wbuf = append(v.wbuf[:0], t.head...)
	v.wbuf = append(v.wbuf, v.out.tp...)
	v.wbuf = append(v.wbuf, "\r\n\r\n"...)
	v.wbuf = append(v.wbuf, t.body...)
	v.woff = 0
	v.p.reset(t.head2, v.tap)
	v.rr, v.rw = 0, 0
	l.enqueue(v)
	v.state = vuWriting
	l.write(v)
}

// write writes what is left of v's request; a full socket buffer waits for
// the socket to be writable.
func (l *evLoop) write(v *lvu) {
	for v.woff < len(v.wbuf) {
		n, err := rawsock.Write(v.fd, v.wbuf[v.woff:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			l.watch(v, syscall.EPOLLOUT)
			return
		}
		if err != nil {
			l.fail(v, v.opErr("write", err))
			return
		}
		v.woff += n
	}
	v.state = vuReading
	l.watch(v, syscall.EPOLLIN)
}

// watch sets the epoll events of v's socket.
func (l *evLoop) watch(v *lvu, events uint32) {
	if v.events == events {
		return
	}
	ev := syscall.EpollEvent{Events: events, Fd: v.idx, Pad: v.gen}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, v.fd, &ev); err != nil {
		l.fail(v, os.NewSyscallError("epoll_ctl", err))
		return
	}
	v.events = events
}

// read reads once from v's socket and parses what came.
func (l *evLoop) read(v *lvu) {
	n, err := rawsock.Read(v.fd, v.rbuf[v.rw:])
	if err == syscall.EAGAIN || err == syscall.EINTR {
		return
	}
	if err != nil {
		l.fail(v, v.opErr("read", err))
		return
	}
	if n == 0 {
		if _, err := v.p.eof(v.rw - v.rr); err != nil {
			l.fail(v, err)
			return
		}
		l.complete(v, false)
		return
	}
	v.rw += n
	used, done, err := v.p.feed(v.rbuf[v.rr:v.rw], v.rr == 0 && v.rw == len(v.rbuf))
	v.rr += used
	switch {
	case err != nil:
		l.fail(v, err)
	case done:
		// Bytes after the answer: the connection is out of step.
		l.complete(v, v.p.keep() && v.rr == v.rw)
	case v.rr == v.rw:
		v.rr, v.rw = 0, 0
	case v.rw == len(v.rbuf):
		v.rw = copy(v.rbuf, v.rbuf[v.rr:v.rw])
		v.rr = 0
	}
}

// complete ends v's request with its answer.
func (l *evLoop) complete(v *lvu, keep bool) {
	l.dequeue(v)
	if keep {
		v.reused = true
		v.idle = v.res.Sent
	} else {
		l.closeConn(v)
	}
	l.done(v, v.p.status, v.p.n, nil)
}

// fail ends v's attempt with err: the request is sent again once on a new
// connection when it failed on a reused one before any byte of the answer
// and is idempotent (the server closed an idle connection), as resume does.
func (l *evLoop) fail(v *lvu, err error) {
	got := v.p.got + v.rw - v.rr
	reused := v.reused
	l.dequeue(v)
	l.closeConn(v)
	var ne net.Error
	if reused && got == 0 && v.attempt == 0 && v.t.h1.idempotent && l.ctx.Err() == nil && !(errors.As(err, &ne) && ne.Timeout()) {
		v.attempt++
		l.dial(v)
		return
	}
	l.done(v, 0, 0, err)
}

// done ends v's request, hands its result on and starts the next.
func (l *evLoop) done(v *lvu, status int, n int64, err error) {
	r, res := l.r, v.res
	res.Done = time.Now()
	res.Status, res.Bytes = status, n
	canceled := r.end(l.ctx, v.out, err)
	r.captured(v.t, res, v.tap, canceled)
	r.refused(v.t, res)
	l.c.leave()
	v.t, v.res, v.tap = nil, nil, nil
	if canceled {
		l.retire(v)
		return
	}
	l.served++
	emit(l.c, l.p, res, l.sink)
	l.next(v, res.Done)
}

// expire times out the requests whose deadline passed.
func (l *evLoop) expire(now time.Time) {
	for l.head != nil && !now.Before(l.head.deadline) {
		v := l.head
		l.dequeue(v)
		l.closeConn(v)
		l.done(v, 0, 0, os.ErrDeadlineExceeded)
	}
}

// retire ends v; its connection stays for the pool.
func (l *evLoop) retire(v *lvu) {
	v.state = vuDone
	l.live--
}

func (v *lvu) opErr(op string, errno error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: v.laddr, Addr: v.raddr, Err: os.NewSyscallError(op, errno)}
}

// staleFd reports whether the server closed the idle connection fd (or
// sent bytes nobody asked for), without blocking.
func staleFd(fd int) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(fd, b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	return n > 0 || (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
}
