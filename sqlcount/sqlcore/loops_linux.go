//go:build linux

package sqlcore

import (
	"runtime"
	"sync"
)

// How many event loops relay a proxy's connections, and which takes a new
// one (the loops themselves: relay_linux.go).

// loops are the event loops of one Serve call, started on first use and
// stopped by close once every connection they relay has ended.
type loops struct {
	p *Proxy

	mu      sync.Mutex
	started bool
	failed  bool
	all     []*eventLoop
	next    int
}

func newLoops(p *Proxy) *loops { return &loops{p: p} }

// numLoops is how many event loops a proxy runs: Config.EventLoops, else,
// as each holds a P while it waits and the process has other work (a
// replayer's own loops), a few, and none when the process has a single P
// (there the goroutine relay shares it better).
func (p *Proxy) numLoops() int {
	if p.cfg.EventLoops > 0 {
		return p.cfg.EventLoops
	}
	n := runtime.GOMAXPROCS(0)
	if n < 2 {
		return 0
	}
	return max(1, (n+2)/4)
}

// OwnProcess sets cfg up for a process that does nothing but relay and
// count (replay sqlcount): an event loop per P, so that connections are
// relayed on every core at once as a proxy's threads would be; each loop on
// a thread of its own (Config.LoopThreads); one P more than loops
// (GOMAXPROCS raised), so that the loops, which hold their P while they
// wait in epoll_wait, never leave the process's other goroutines
// (accepting, handshakes, timers) waiting for one; and the server's answers
// decoded after they are relayed (Config.DecodeAfterRelay), as no request
// waits for its statements. With a single P it changes nothing; off Linux,
// where connections are relayed by goroutines, neither.
func OwnProcess(cfg *Config) {
	n := ownProcs()
	if n < 2 || cfg.NoEventLoops {
		return
	}
	cfg.EventLoops = n
	cfg.LoopThreads = true
	cfg.DecodeAfterRelay = true
	if runtime.GOMAXPROCS(0) < n+1 {
		runtime.GOMAXPROCS(n + 1)
	}
}

// ownProcs is GOMAXPROCS before OwnProcess first raised it: a process that
// starts several counters (tests) raises it once.
var ownProcs = sync.OnceValue(func() int { return runtime.GOMAXPROCS(0) })

// get returns the loop for a new connection, or nil when connections are to
// be relayed by goroutines.
func (ls *loops) get() *eventLoop {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.started {
		ls.started = true
		for range ls.p.numLoops() {
			l, err := newEventLoop(ls.p)
			if err != nil {
				ls.p.log.Warn("sqlcount: relaying with goroutines", "err", err)
				ls.failed = true
				break
			}
			ls.all = append(ls.all, l)
		}
	}
	if ls.failed || len(ls.all) == 0 || ls.p.goroutinesOnly {
		return nil
	}
	// The loop with the fewest connections, the first of them after the
	// last one given, so that short connections do not pile the long ones
	// onto one loop.
	var l *eventLoop
	for i := range ls.all {
		c := ls.all[(ls.next+i)%len(ls.all)]
		if l == nil || c.live.Load() < l.live.Load() {
			l = c
		}
	}
	ls.next++
	return l
}

// close stops the loops; their connections must have ended.
func (ls *loops) close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, l := range ls.all {
		l.close()
	}
	ls.all = nil
}
