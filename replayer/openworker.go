package replayer

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// The open model's workers. A worker owns one connection and has at most one
// request in flight. An idle worker on the fast path (plain HTTP/1.1, h1.go)
// waits on its connection, in a read, not for a message: at a request's
// intended start the scheduler writes the request on an idle worker's
// connection itself, and the response wakes the worker, which reads it. No
// goroutine has to be woken to send the request (waking one is what costs
// most per request on a small machine, and it adds tens of microseconds
// before the request goes out), and none is woken at all but by the
// response. Otherwise (net/http for https, a worker without a connection, a
// new worker) the scheduler hands the whole request over and yields its
// thread, so that the worker sends it at once.

// openWorker is one worker of the open model.
type openWorker struct {
	o    *openRun
	cn   *conn
	kick chan struct{} // wakes the worker when it waits without a connection

	// The scheduler holds mu while it hands a request over (from
	// idleSet.take on); the fields below are the request.
	mu sync.Mutex
	j  job
	// res is the request's result; out, deadline and sent are set when the
	// scheduler started the request itself: it wrote the first sent bytes
	// of the connection's wbuf, with the request's deadline set. sent < 0
	// means the worker sends the request.
	res      *snapshots.Result
	out      outgoing
	deadline time.Time
	sent     int
	quit     bool // no more requests: return the connection and exit

	// Owned by the idle set's lock.
	peeking bool // waits in a read on its connection
	idx     int  // position in the idle set, -1 when not in it
}

// idleSet holds the idle workers, the most recently idle on top.
type idleSet struct {
	mu    sync.Mutex
	ws    []*openWorker
	wait  bool          // the scheduler waits for a worker
	freed chan struct{} // tells the waiting scheduler a worker is idle
}

// put adds w, idle, waiting on its connection when peeking.
func (s *idleSet) put(w *openWorker, peeking bool) {
	s.mu.Lock()
	w.peeking = peeking
	w.idx = len(s.ws)
	s.ws = append(s.ws, w)
	if s.wait {
		s.wait = false
		select {
		case s.freed <- struct{}{}:
		default: // one is pending already
		}
	}
	s.mu.Unlock()
}

// take removes the most recently idle worker and returns it with its mu
// held, or nil when none is idle. When none is and wait is set, the next
// put signals freed.
func (s *idleSet) take(wait bool) *openWorker {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.ws)
	if n == 0 {
		s.wait = wait
		return nil
	}
	w := s.ws[n-1]
	s.ws = s.ws[:n-1]
	w.idx = -1
	w.mu.Lock() // before the worker can see that it was taken
	return w
}

// leave removes w, woken while idle, and reports whether it was still
// there: false means the scheduler took it and handed it a request.
func (s *idleSet) leave(w *openWorker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := w.idx
	if i < 0 {
		return false
	}
	last := len(s.ws) - 1
	s.ws[i] = s.ws[last]
	s.ws[i].idx = i
	s.ws = s.ws[:last]
	w.idx = -1
	return true
}

// newWorker starts a worker for the request j, which it sends itself.
func (o *openRun) newWorker(j job) {
	w := &openWorker{o: o, kick: make(chan struct{}, 1), idx: -1}
	o.workers++
	o.wg.Add(1)
	o.start(w, j)
	w.sent = -1
	go w.run()
	runtime.Gosched() // let it send now, on this thread
}

// start counts j in flight, and late when it was held.
func (o *openRun) start(w *openWorker, j job) {
	w.j, w.res, w.quit = j, &snapshots.Result{Intended: j.intended, Phase: o.p.Phase}, false
	o.c.enter()
	if j.held {
		o.c.sentLate(time.Since(j.intended))
	}
}

// send starts j on w, which the scheduler took from the idle set (its mu
// held): it writes the request on w's connection itself when w waits on
// one, else hands the request over.
func (o *openRun) send(w *openWorker, j job) {
	o.start(w, j)
	h := w.cn.h1
	if !w.peeking || h == nil || j.t.readErr != nil || o.r.stage != nil || j.t.h2 != nil {
		w.sent = -1
		w.handOver()
		runtime.Gosched() // let it send now, on this thread
		return
	}
	r := o.r
	w.out = r.begin(j.t, w.res, r.counting())
	h.fill(&j.t.h1, w.out.tp)
	w.res.Sent = time.Now()
	w.deadline = w.res.Sent.Add(r.timeout)
	h.setDeadline(w.deadline)
	n, _ := h.tryWrite()
	w.sent = n
	if n < len(h.wbuf) {
		// Short of the whole request (a full socket buffer, a broken
		// connection): wake the worker, which writes the rest or fails. It
		// sets the request's deadline again once it has mu.
		h.wake()
	}
	w.mu.Unlock()
}

// stop tells w, taken from the idle set (its mu held), to exit.
func (w *openWorker) stop() {
	w.quit = true
	w.handOver()
}

// handOver wakes w, taken from the idle set (its mu held), to take what
// it was handed: one waiting in a read on its connection by a deadline in
// the past, one without by its kick.
func (w *openWorker) handOver() {
	if h := w.cn.h1; w.peeking && h != nil {
		h.wake()
	} else {
		w.kick <- struct{}{}
	}
	w.mu.Unlock()
}

// run serves the requests the scheduler hands over until it says quit.
func (w *openWorker) run() {
	defer w.o.wg.Done()
	w.cn = newConn(w.o.ctx, &w.o.r.pool)
	defer w.cn.close()
	for {
		w.mu.Lock() // wait until the scheduler is done handing over
		j, res, out, deadline, sent, quit := w.j, w.res, w.out, w.deadline, w.sent, w.quit
		w.j, w.res, w.out = job{}, nil, outgoing{}
		w.mu.Unlock()
		if quit {
			return
		}
		w.serve(j, res, out, deadline, sent)
		w.await()
	}
}

// serve completes one request and gives its result to the sink.
func (w *openWorker) serve(j job, res *snapshots.Result, out outgoing, deadline time.Time, sent int) {
	o := w.o
	var canceled bool
	if sent < 0 {
		canceled = o.r.sendAt(o.ctx, w.cn, j.g, j.t, res)
	} else {
		var err error
		tap := o.r.tap(w.cn, j.t, res.Phase)
		res.Status, res.Bytes, err = w.cn.resume(o.ctx, o.r.addr, &j.t.h1, out.tp, res.Sent, deadline, sent, tap)
		res.Done = time.Now()
		canceled = o.r.end(o.ctx, out, err)
		o.r.captured(j.t, res, tap, canceled)
		o.r.refused(j.t, res)
	}
	o.c.leave()
	if !canceled {
		emit(o.c, o.p, res, o.sink)
	}
}

// await puts w in the idle set and returns when the scheduler has taken it.
// On the fast path w waits in a read on its connection: the response to the
// request the scheduler writes wakes it, and so does the connection
// breaking or the server closing it while idle, after which w drops it and
// waits without one.
func (w *openWorker) await() {
	for {
		h := w.cn.h1
		if !w.o.r.raw {
			h = nil
		}
		w.o.idle.put(w, h != nil)
		var err error
		if h != nil {
			_, err = h.br.Peek(1)
		} else {
			<-w.kick
		}
		if !w.o.idle.leave(w) {
			return // taken: the scheduler holds mu until the request is handed over
		}
		if h == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && w.o.ctx.Err() == nil {
			// The last request's deadline ran out while idle.
			h.setDeadline(time.Time{})
			continue
		}
		w.cn.drop() // closed by the server, bytes nobody asked for, or aborted
	}
}
