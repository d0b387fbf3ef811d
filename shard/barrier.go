package shard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of a Barrier.
const (
	// DefaultWait is how long shard 0 waits for the others, and the others
	// try to reach it and wait for the start.
	DefaultWait = 2 * time.Minute
	// DefaultLead is how long after the last shard arrives the load starts:
	// time for the start to reach every shard.
	DefaultLead = time.Second
)

// The ways a barrier fails (errors.Is on a *BarrierError), each with its
// own exit code for `replay run` (BarrierError.ExitCode): the run is
// invalid and must be run again.
var (
	// ErrLate: this shard reached shard 0 after the others had started.
	ErrLate = errors.New("late: the other shards started without this one")
	// ErrLostPeer: a shard (or shard 0) went away before the start.
	ErrLostPeer = errors.New("lost a shard before the start")
	// ErrNeverCame: a shard (or shard 0, for the others) did not come
	// within the wait.
	ErrNeverCame = errors.New("a shard never came to the barrier")
	// ErrWrongShard: a shard of another plan, or a shard already there,
	// came to the barrier.
	ErrWrongShard = errors.New("a shard of another plan, or one already there, came to the barrier")
)

// Exit codes of the barrier's failures.
const (
	ExitLate       = 20
	ExitLostPeer   = 21
	ExitNeverCame  = 22
	ExitWrongShard = 23
)

// BarrierError is a barrier's failure: Kind is one of ErrLate,
// ErrLostPeer, ErrNeverCame, ErrWrongShard; Detail says which shard.
type BarrierError struct {
	Kind   error
	Detail string
}

func (e *BarrierError) Error() string {
	return fmt.Sprintf("barrier: %v: %s (exit %d; the run is invalid)", e.Kind, e.Detail, e.ExitCode())
}

func (e *BarrierError) Unwrap() error { return e.Kind }

// ExitCode is the exit code of `replay run` for e.
func (e *BarrierError) ExitCode() int {
	switch e.Kind {
	case ErrLate:
		return ExitLate
	case ErrLostPeer:
		return ExitLostPeer
	case ErrNeverCame:
		return ExitNeverCame
	}
	return ExitWrongShard
}

// kinds name the failures on the wire.
var kinds = map[string]error{"late": ErrLate, "lost": ErrLostPeer, "never": ErrNeverCame, "wrong": ErrWrongShard}

func kindName(err error) string {
	for n, k := range kinds {
		if k == err {
			return n
		}
	}
	return "wrong"
}

// Barrier is where the shards of one plan meet before the load: shard 0
// listens on Addr, the others connect to it and say who they are; when
// all N are there shard 0 sends each the start time T0 (now plus Lead) and
// they all start then. It speaks lines of text over TCP:
//
//	JOIN PLAN K N      a shard to shard 0
//	START UNIXNANO     shard 0 to each shard: the load starts then
//	ABORT KIND DETAIL  shard 0 to each shard: the barrier failed
type Barrier struct {
	Spec Spec
	// Plan is the plan's hash: a shard of another plan is turned away.
	Plan string
	// Addr is shard 0's HOST:PORT (in Kubernetes the DNS name of shard
	// 0's pod in a headless Service); shard 0 listens on its port.
	Addr string
	// Wait bounds the waits (zero: DefaultWait); Lead is T0's margin
	// (zero: DefaultLead).
	Wait, Lead time.Duration
	// Listener, when set, is shard 0's listener (tests, local shards);
	// nil listens on Addr's port, on every interface.
	Listener net.Listener
	// Warn, when set, is told that shard 0 listens where the network
	// reaches it (Addr a name: every interface).
	Warn func(error)

	mu     sync.Mutex
	closed bool
	ln     net.Listener
}

func (b *Barrier) wait() time.Duration {
	if b.Wait > 0 {
		return b.Wait
	}
	return DefaultWait
}

// Start waits at the barrier and returns T0, or a *BarrierError. Shard 0
// keeps answering shards that come after the start (they are late) until
// Close.
func (b *Barrier) Start(ctx context.Context) (time.Time, error) {
	if b.Spec.K == 0 {
		return b.lead(ctx)
	}
	return b.join(ctx)
}

// Close stops shard 0's listener.
func (b *Barrier) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if b.ln != nil {
		return b.ln.Close()
	}
	return nil
}

// join is a shard other than 0: it connects to shard 0 (retrying until the
// wait ends: shard 0 may start later), says who it is and waits for START.
func (b *Barrier) join(ctx context.Context) (time.Time, error) {
	deadline := time.Now().Add(b.wait())
	var conn net.Conn
	for {
		d := net.Dialer{Deadline: deadline}
		c, err := d.DialContext(ctx, "tcp", b.Addr)
		if err == nil {
			conn = c
			break
		}
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		if !time.Now().Add(200 * time.Millisecond).Before(deadline) {
			return time.Time{}, &BarrierError{ErrNeverCame, fmt.Sprintf("shard %s could not reach shard 0 at %s within %s: %v", b.Spec, b.Addr, b.wait(), err)}
		}
		time.Sleep(200 * time.Millisecond)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	conn.SetDeadline(deadline)
	if _, err := fmt.Fprintf(conn, "JOIN %s %d %d\n", b.Plan, b.Spec.K, b.Spec.N); err != nil {
		return time.Time{}, &BarrierError{ErrLostPeer, fmt.Sprintf("shard %s lost shard 0: %v", b.Spec, err)}
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		if ctx.Err() != nil {
			return time.Time{}, ctx.Err()
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return time.Time{}, &BarrierError{ErrNeverCame, fmt.Sprintf("shard %s waited %s for the start", b.Spec, b.wait())}
		}
		return time.Time{}, &BarrierError{ErrLostPeer, fmt.Sprintf("shard %s lost shard 0 before the start", b.Spec)}
	}
	f := strings.Fields(line)
	switch {
	case len(f) == 2 && f[0] == "START":
		ns, err := strconv.ParseInt(f[1], 10, 64)
		if err == nil {
			return time.Unix(0, ns), nil
		}
	case len(f) >= 2 && f[0] == "ABORT":
		kind, ok := kinds[f[1]]
		if !ok {
			kind = ErrWrongShard
		}
		return time.Time{}, &BarrierError{kind, strings.Join(f[2:], " ")}
	}
	return time.Time{}, &BarrierError{ErrWrongShard, fmt.Sprintf("shard 0 said %q", strings.TrimSpace(line))}
}
