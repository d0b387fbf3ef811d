//go:build linux

package replayer

import (
	"context"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/replaykit/replay/internal/rawsock"

	"github.com/replaykit/replay/snapshots"
)

// runClosedLoop runs the closed model on event loops (evloop_linux.go), one
// per P but one (loopCount), each owning an equal share of
// the virtual users; ok is false when the plan needs the goroutine path
// (see loopable), which then runs it.
func (r *Replayer) runClosedLoop(ctx context.Context, p LoadPlan, sink ResultSink) (st Stats, ok bool) {
	if !r.loopable(p) {
		return Stats{}, false
	}
	ids := r.cfg.Shard.users(max(p.VUs, 1))
	if len(ids) == 0 {
		return Stats{}, false
	}
	loops, err := r.newEvLoops(min(loopCount(), len(ids)))
	if err != nil {
		r.log.Debug("replayer: closed model on goroutines", "err", err)
		return Stats{}, false
	}
	d, it := p.bounds()
	c := &counters{started: r.loadStart()}
	limit, total := r.limit(it)
	rep := startReporter(p, c, d, total)
	now := time.Now()
	for i := range ids {
		l := loops[i%len(loops)]
		l.ctx, l.p, l.c, l.sink, l.limit = ctx, p, c, sink, limit
		_, l.copies = sink.(ResultCopier)
		if d > 0 {
			l.end = c.started.Add(d)
		}
		r.adopt(l, now)
	}
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(l.run)
	}
	wg.Wait()
	for _, l := range loops {
		r.loopServed.Add(l.served)
	}
	rep.end()
	return c.stats(p, "closed"), true
}

// loopable reports whether a model can run p on event loops (the closed
// one here, the open and as-recorded ones in evloop_open_linux.go): a
// plain-http target on the fast path (not NetHTTP), no stages (ramp), no
// request rewriting (Config.State), no SQL or upstream counter (they wait
// for a request's statements and calls), recorded HTTP/1.1 requests, and
// REPLAY_EVLOOP not "off".
func (r *Replayer) loopable(p LoadPlan) bool {
	if !r.raw || r.noLoop || r.stage != nil || r.counting() || len(p.Stages) > 0 || os.Getenv("REPLAY_EVLOOP") == "off" {
		return false
	}
	r.h1Once.Do(func() { r.h1Only = h1Only(r.seq) })
	return r.h1Only
}

// h1Only reports whether the sequence's requests go over HTTP/1.1: all of a
// sequence in memory, the first of every endpoint of one read from a
// snapshot (a later one recorded over HTTP/2 is sent by a goroutine).
func h1Only(seq requestSeq) bool {
	if s, ok := seq.(sliceSeq); ok {
		for _, t := range s {
			if t.h2 != nil {
				return false
			}
		}
		return true
	}
	for _, i := range seq.firsts() {
		if t := seq.at(i); t.h2 != nil {
			return false
		}
	}
	return true
}

// loopCount is the number of event loops: REPLAY_LOOPS, else one per P
// but one (at least one). A loop waits in epoll_wait holding its P; while
// no P is idle, the runtime's monitor takes the P of a goroutine in a
// system call away after 20µs, and the loop's thread then has to get one
// back, parking and waking through a futex. One P left to the rest of the
// process (the run file, the summary) keeps one idle: with 2 Ps, one loop
// cost 3.4 CPU-µs per request where two cost 4.7 (docs/benchmarks.md).
func loopCount() int {
	if n, err := strconv.Atoi(os.Getenv("REPLAY_LOOPS")); err == nil && n > 0 {
		return n
	}
	return max(1, runtime.GOMAXPROCS(0)-1)
}

func (r *Replayer) newEvLoops(n int) ([]*evLoop, error) {
	var loops []*evLoop
	for range n {
		l, err := newEvLoop(r)
		if err != nil {
			for _, l := range loops {
				l.closeFDs()
			}
			return nil, err
		}
		loops = append(loops, l)
	}
	return loops, nil
}

func (l *evLoop) closeFDs() {
	syscall.Close(l.epfd)
	syscall.Close(l.wake)
}

// adopt adds a virtual user to l, with an idle connection of the pool when
// there is one that is still good.
func (r *Replayer) adopt(l *evLoop, now time.Time) {
	for {
		h := r.pool.get()
		if h == nil {
			break
		}
		if h.br.Buffered() > 0 || h.stale(now) {
			h.nc.Close()
			continue
		}
		fd, err := rawsock.Dup(h.nc)
		laddr, raddr := h.nc.LocalAddr(), h.nc.RemoteAddr()
		h.nc.Close()
		if err != nil {
			continue
		}
		if l.addVU(fd, laddr, raddr, h.reused, h.idle) == nil {
			return
		}
		l.vus, l.live = l.vus[:len(l.vus)-1], l.live-1
	}
	l.addVU(-1, nil, nil, false, time.Time{})
}

// dial has a goroutine dial v's connection, by v's deadline.
func (l *evLoop) dial(v *lvu) {
	v.state = vuDialing
	deadline, addr := v.deadline, l.r.addr
	go func() {
		d := net.Dialer{Deadline: deadline, KeepAlive: 30 * time.Second}
		nc, err := d.DialContext(l.ctx, "tcp", addr)
		fd := -1
		if err == nil {
			v.laddr, v.raddr = nc.LocalAddr(), nc.RemoteAddr()
			fd, err = rawsock.Dup(nc)
			nc.Close()
		}
		v.dialFd, v.dialErr = fd, err
		l.handBack(v)
	}()
}

// away has a goroutine send request g (t, recorded over HTTP/2) as the
// goroutine path does.
func (l *evLoop) away(v *lvu, g int64, t *template, res *snapshots.Result) {
	v.state, v.res = vuAway, res
	go func() {
		cn := newConn(l.ctx, &l.r.pool)
		v.awayCanceled = l.r.sendAt(l.ctx, cn, g, t, res)
		cn.close()
		l.handBack(v)
	}()
}

func (l *evLoop) handBack(v *lvu) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.back = append(l.back, v)
	l.pokeLocked()
}

// poke wakes the loop, unless it is closed.
func (l *evLoop) poke() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pokeLocked()
}

func (l *evLoop) pokeLocked() {
	if !l.shut {
		b := [8]byte{1}
		syscall.Write(l.wake, b[:])
	}
}

// woken takes the users handed back, and cancels the requests in flight
// once ctx is done.
func (l *evLoop) woken() {
	var b [8]byte
	syscall.Read(l.wake, b[:])
	l.mu.Lock()
	back := l.back
	l.back = nil
	l.mu.Unlock()
	for _, v := range back {
		l.resume(v)
	}
	if l.ctx.Err() != nil && !l.canceled {
		l.canceled = true
		for _, v := range l.vus {
			if v.state == vuWriting || v.state == vuReading {
				l.dequeue(v)
				l.closeConn(v)
				l.done(v, 0, 0, l.ctx.Err())
			}
		}
	}
}

// resume goes on with v, handed back by a goroutine.
func (l *evLoop) resume(v *lvu) {
	switch v.state {
	case vuAway:
		res := v.res
		v.res = nil
		l.c.leave()
		if v.awayCanceled {
			l.retire(v)
			return
		}
		emit(l.c, l.p, res, l.sink)
		l.next(v, time.Now())
	case vuDialing:
		err := v.dialErr
		if err == nil && l.ctx.Err() != nil {
			syscall.Close(v.dialFd)
			err = l.ctx.Err()
		}
		if err == nil {
			err = l.attach(v, v.dialFd)
		}
		if err != nil {
			l.done(v, 0, 0, err)
			return
		}
		l.send(v, time.Now())
	}
}

// finish hands the connections left to the pool, or closes them when the
// run was canceled, and closes the loop.
func (l *evLoop) finish() {
	for _, v := range l.vus {
		if v.fd < 0 {
			continue
		}
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, v.fd, nil)
		if l.ctx.Err() != nil {
			syscall.Close(v.fd)
		} else {
			l.toPool(v)
		}
		v.fd = -1
	}
	l.mu.Lock()
	l.shut = true // no poke from now on: the eventfd's number may be reused
	l.mu.Unlock()
	l.closeFDs()
}

// toPool hands v's connection to the pool as a net.Conn (closing v.fd).
func (l *evLoop) toPool(v *lvu) {
	f := os.NewFile(uintptr(v.fd), "")
	nc, err := net.FileConn(f) // a duplicate
	f.Close()
	if err != nil {
		return
	}
	h := newH1Conn(nc)
	h.reused, h.idle = v.reused, v.idle
	l.r.pool.put(h)
}

// enqueue puts v in the deadline queue, in deadline order (a resent
// request keeps its first deadline).
func (l *evLoop) enqueue(v *lvu) {
	if v.queued {
		l.dequeue(v)
	}
	v.queued = true
	at := l.tail
	for at != nil && at.deadline.After(v.deadline) {
		at = at.prev
	}
	v.prev = at
	if at == nil {
		v.next, l.head = l.head, v
	} else {
		v.next, at.next = at.next, v
	}
	if v.next == nil {
		l.tail = v
	} else {
		v.next.prev = v
	}
}

func (l *evLoop) dequeue(v *lvu) {
	if !v.queued {
		return
	}
	v.queued = false
	if v.prev == nil {
		l.head = v.next
	} else {
		v.prev.next = v.next
	}
	if v.next == nil {
		l.tail = v.prev
	} else {
		v.next.prev = v.prev
	}
	v.prev, v.next = nil, nil
}
