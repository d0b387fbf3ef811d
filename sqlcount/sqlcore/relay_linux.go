//go:build linux

package sqlcore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/replaykit/replay/internal/rawsock"
)

// The Linux relay: event loops, as pgbouncer's.
//
// Relaying through the Go netpoller costs, per message and direction, a read
// that fails with EAGAIN, a goroutine parking, an epoll wake-up in the
// scheduler and often a futex to wake another thread: most of the proxy's
// CPU in a query/answer ping-pong. An event loop instead owns the sockets of
// many connections (duplicates of them, taken out of the netpoller), waits
// for them in its own level-triggered epoll set, and for each readable
// socket reads once into its buffer, decodes in place and writes the same
// bytes to the other socket once: one epoll_wait per batch of ready
// sockets, then one read and one write per chunk, and nothing else (those
// two without the scheduler's system-call bookkeeping, as they never
// block: about 100ns less each).
//
// The loop's goroutine blocks in epoll_wait holding its P (the runtime
// lends it to other goroutines when they need it), and yields every
// loopYieldEvery so that the runtime's monitor does not take it for a
// goroutine that never yields, which would keep that monitor polling.

const (
	// loopReadSize is the most a loop reads from a socket at once.
	loopReadSize = 64 << 10
	// loopEvents is the most ready sockets handled per epoll_wait.
	loopEvents = 128
	// loopYieldEvery is how often a busy loop yields: below the runtime's
	// 10ms preemption period.
	loopYieldEvery = 8 * time.Millisecond
)

// relayLoop relays client and server through the loop l until either ends,
// and returns how each direction ended, as relayGoroutines does. ok is false
// when the loop could not take the connection (nothing was relayed yet).
func (p *Proxy) relayLoop(ctx context.Context, l *eventLoop, client, server net.Conn, s *feeds) (cerr, serr error, ok bool) {
	// The loop takes the socket over; a connection-limited listener's
	// connection still frees its slot when the caller closes it.
	if u, ok := client.(interface{ Unwrap() net.Conn }); ok {
		client = u.Unwrap()
	}
	cfd, err := rawsock.Dup(client)
	if err != nil {
		p.log.Debug("sqlcount: relaying with goroutines", "err", err)
		return nil, nil, false
	}
	sfd, err := rawsock.Dup(server)
	if err != nil {
		syscall.Close(cfd)
		p.log.Debug("sqlcount: relaying with goroutines", "err", err)
		return nil, nil, false
	}
	c, err := l.add(cfd, sfd, s)
	if err != nil {
		syscall.Close(cfd)
		syscall.Close(sfd)
		p.log.Debug("sqlcount: relaying with goroutines", "err", err)
		return nil, nil, false
	}
	// The duplicates carry the connection now; closing the originals only
	// takes them out of the netpoller.
	client.Close()
	server.Close()

	// Ending Serve shuts the sockets down; the loop sees that as a hang-up.
	// The sockets are closed only once the loop is done with them, and never
	// while shut is running.
	var mu sync.Mutex
	closed := false
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !closed {
			syscall.Shutdown(cfd, syscall.SHUT_RDWR)
			syscall.Shutdown(sfd, syscall.SHUT_RDWR)
		}
	})
	<-c.done
	stop()
	mu.Lock()
	closed = true
	syscall.Close(cfd)
	syscall.Close(sfd)
	mu.Unlock()
	return c.client.err, c.server.err, true
}

// side is one socket of a relayed connection, with the direction that reads
// from it.
type side struct {
	c    *loopConn
	fd   int
	peer *side
	feed func([]byte, time.Time) error
	out  []byte  // read from this socket, not yet written to the peer
	outb *[]byte // out's buffer, from the proxy's pool
	ev   uint32  // the epoll events asked for
	err  error   // why this direction ended
}

// loopConn is a connection relayed by an event loop.
type loopConn struct {
	client, server side
	ended          bool          // the loop is done with it
	done           chan struct{} // closed when ended
}

// eventLoop relays connections on one goroutine.
type eventLoop struct {
	p     *Proxy
	epfd  int
	wakeR int // a pipe that wakes the loop to stop
	wakeW int

	live atomic.Int32 // connections added, not yet ended

	mu      sync.Mutex
	sides   []*side // by socket
	stop    bool
	stopped chan struct{}

	// The loop goroutine's own.
	buf    []byte
	events []syscall.EpollEvent
	ready  []*side
}

func newEventLoop(p *Proxy) (*eventLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("event loop: epoll: %w", err)
	}
	var pipe [2]int
	if err := syscall.Pipe2(pipe[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		syscall.Close(epfd)
		return nil, fmt.Errorf("event loop: pipe: %w", err)
	}
	l := &eventLoop{
		p: p, epfd: epfd, wakeR: pipe[0], wakeW: pipe[1],
		stopped: make(chan struct{}),
		buf:     make([]byte, loopReadSize),
		events:  make([]syscall.EpollEvent, loopEvents),
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wakeR)}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wakeR, &ev); err != nil {
		l.closeFDs()
		return nil, fmt.Errorf("event loop: epoll: %w", err)
	}
	go l.run()
	return l, nil
}

func (l *eventLoop) closeFDs() {
	syscall.Close(l.epfd)
	syscall.Close(l.wakeR)
	syscall.Close(l.wakeW)
}

// close stops the loop and waits for it.
func (l *eventLoop) close() {
	l.mu.Lock()
	l.stop = true
	l.mu.Unlock()
	syscall.Write(l.wakeW, []byte{0})
	<-l.stopped
	l.closeFDs()
}

// add relays between the sockets cfd (the client's) and sfd (the server's),
// feeding what each sends to s, until either ends; then the returned
// connection's done is closed and the loop no longer uses the sockets.
func (l *eventLoop) add(cfd, sfd int, s *feeds) (*loopConn, error) {
	c := &loopConn{done: make(chan struct{})}
	c.client = side{c: c, fd: cfd, peer: &c.server, feed: s.client, ev: syscall.EPOLLIN}
	c.server = side{c: c, fd: sfd, peer: &c.client, feed: s.server, ev: syscall.EPOLLIN}
	// The loop may take events for the sockets as soon as they are in its
	// epoll set, but it looks sockets up under mu: holding mu until both
	// are in (or neither is) keeps it off a half-added connection, and the
	// loop owns c from the unlock on.
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop {
		return nil, errLoopStopped
	}
	if need := max(cfd, sfd) + 1; need > len(l.sides) {
		l.sides = append(l.sides, make([]*side, max(need-len(l.sides), 64))...)
	}
	for i, fd := range []int{cfd, sfd} {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(fd)}
		if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
			if i == 1 {
				syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, cfd, nil)
			}
			return nil, fmt.Errorf("event loop: epoll: %w", err)
		}
	}
	l.sides[cfd], l.sides[sfd] = &c.client, &c.server
	l.live.Add(1)
	return c, nil
}

func (l *eventLoop) run() {
	defer close(l.stopped)
	if l.p.cfg.LoopThreads {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	lastYield := time.Now()
	for {
		n, err := syscall.EpollWait(l.epfd, l.events, -1)
		if err != nil {
			if err == syscall.EINTR {
				continue
			}
			// Not expected with valid arguments; give every connection up
			// rather than spin.
			l.fail(fmt.Errorf("event loop: epoll_wait: %w", err))
			return
		}
		now := time.Now()
		if now.Sub(lastYield) >= loopYieldEvery {
			runtime.Gosched()
			lastYield = now
		}
		// Look the sockets up once per batch: a connection ended earlier in
		// the batch is skipped by its ended mark, even if a new connection
		// has reused its socket numbers since.
		l.ready = l.ready[:0]
		l.mu.Lock()
		stop := l.stop
		for _, ev := range l.events[:n] {
			var sd *side
			if int(ev.Fd) < len(l.sides) {
				sd = l.sides[ev.Fd]
			}
			l.ready = append(l.ready, sd)
		}
		l.mu.Unlock()
		if stop {
			return
		}
		for i, ev := range l.events[:n] {
			sd := l.ready[i]
			if sd == nil || sd.c.ended {
				continue
			}
			if ev.Events&syscall.EPOLLOUT != 0 && sd.peer.out != nil {
				l.flush(sd.peer)
				if sd.c.ended {
					continue
				}
			}
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) == 0 {
				continue
			}
			if sd.out == nil {
				l.relay(sd, now)
			} else if ev.Events&(syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
				// Gone while what it sent waits for its peer.
				l.end(sd, io.ErrUnexpectedEOF)
			}
		}
	}
}

// relay reads once from sd's socket, feeds what came to the decoder and
// writes it to the peer, keeping what the peer does not take yet.
func (l *eventLoop) relay(sd *side, now time.Time) {
	n, err := rawsock.Read(sd.fd, l.buf)
	if err != nil {
		if err != syscall.EAGAIN && err != syscall.EINTR {
			l.end(sd, err)
		}
		return
	}
	if n == 0 {
		l.end(sd, io.EOF)
		return
	}
	b := l.buf[:n]
	// What the client sends goes to the server first and is decoded after:
	// the server's answer comes through this loop too, so it is decoded
	// after the command in any case, and the command's start is now, when
	// the batch was read. What the server sends is decoded first, so that
	// a statement is counted before the client can act on its answer,
	// unless nothing attributes statements to what the client does
	// (Config.DecodeAfterRelay).
	after := sd == &sd.c.client || l.p.cfg.DecodeAfterRelay
	if !after {
		if err := sd.feed(b, now); err != nil {
			l.end(sd, err)
			return
		}
	}
	w, err := rawsock.Write(sd.peer.fd, b)
	if err != nil {
		if err != syscall.EAGAIN && err != syscall.EINTR {
			l.end(sd, err)
			return
		}
		w = 0
	}
	if after {
		if err := sd.feed(b, now); err != nil {
			l.end(sd, err)
			return
		}
	}
	if w == n {
		return
	}
	// The peer is behind: keep the rest, and read no more from sd until
	// the peer has taken it.
	sd.outb = l.p.bufs.Get().(*[]byte)
	sd.out = append((*sd.outb)[:0], b[w:]...)
	l.watch(sd)
	l.watch(sd.peer)
}

// flush writes what sd has pending to its peer.
func (l *eventLoop) flush(sd *side) {
	w, err := rawsock.Write(sd.peer.fd, sd.out)
	if err != nil {
		if err != syscall.EAGAIN && err != syscall.EINTR {
			l.end(sd, err)
		}
		return
	}
	if sd.out = sd.out[w:]; len(sd.out) > 0 {
		return
	}
	l.p.bufs.Put(sd.outb)
	sd.out, sd.outb = nil, nil
	l.watch(sd)
	l.watch(sd.peer)
}

// watch sets the epoll events of sd's socket: readable unless what was read
// from it is pending, writable while its peer's is.
func (l *eventLoop) watch(sd *side) {
	if sd.c.ended {
		return
	}
	var ev uint32
	if sd.out == nil {
		ev |= syscall.EPOLLIN
	}
	if sd.peer.out != nil {
		ev |= syscall.EPOLLOUT
	}
	if ev == sd.ev {
		return
	}
	sd.ev = ev
	e := syscall.EpollEvent{Events: ev, Fd: int32(sd.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_MOD, sd.fd, &e); err != nil {
		l.end(sd, fmt.Errorf("event loop: epoll: %w", err))
	}
}

// end ends sd's connection, the direction reading from sd having failed
// with err, and hands it back to its goroutine.
func (l *eventLoop) end(sd *side, err error) {
	c := sd.c
	if c.ended {
		return
	}
	c.ended = true
	l.live.Add(-1)
	sd.err = err
	for _, x := range []*side{&c.client, &c.server} {
		syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, x.fd, nil)
		if x.outb != nil {
			l.p.bufs.Put(x.outb)
			x.out, x.outb = nil, nil
		}
	}
	l.mu.Lock()
	l.sides[c.client.fd], l.sides[c.server.fd] = nil, nil
	l.mu.Unlock()
	close(c.done)
}

// fail ends every connection of the loop with err and stops taking new
// ones (they are then relayed by goroutines).
func (l *eventLoop) fail(err error) {
	l.mu.Lock()
	var live []*side
	for _, sd := range l.sides {
		if sd != nil && sd == &sd.c.client {
			live = append(live, sd)
		}
	}
	l.stop = true
	l.mu.Unlock()
	for _, sd := range live {
		l.end(sd, err)
	}
}

var errLoopStopped = errors.New("event loop stopped")
