package shard

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// event is what shard 0 hears from a connection: a join, or a joined
// shard's connection lost.
type event struct {
	k    int
	conn net.Conn
	lost bool
}

// leader is shard 0's side of a barrier.
type leader struct {
	b        *Barrier
	ln       net.Listener
	events   chan event
	done     chan struct{} // closed when wait returns
	mu       sync.Mutex
	released bool
	t0       time.Time
}

// lead is shard 0: it listens, waits for the N-1 others and sends them T0.
func (b *Barrier) lead(ctx context.Context) (time.Time, error) {
	ln := b.Listener
	if ln == nil {
		host, port, err := net.SplitHostPort(b.Addr)
		if err != nil {
			return time.Time{}, fmt.Errorf("barrier: %w", err)
		}
		host, exposed := listenHost(host)
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, port)); err != nil {
			return time.Time{}, fmt.Errorf("barrier: %w", err)
		}
		if exposed && b.Warn != nil {
			b.Warn(fmt.Errorf("the shard barrier listens on %s (for %s), reachable from the network: anyone there can join the run as a shard or hold its start until --barrier-timeout", ln.Addr(), b.Addr))
		}
	}
	b.mu.Lock()
	b.ln = ln
	closed := b.closed
	b.mu.Unlock()
	if closed {
		ln.Close()
		return time.Time{}, fmt.Errorf("barrier: closed")
	}
	l := &leader{b: b, ln: ln, events: make(chan event), done: make(chan struct{})}
	go l.accept()
	return l.wait(ctx)
}

// listenHost is where shard 0 listens for the barrier address's host: an
// IP address is this machine's (loopback for local shards), "localhost"
// loopback; another name is shard 0's in DNS (a pod's in a headless
// Service): every interface. exposed reports the ones other machines
// reach.
func listenHost(host string) (_ string, exposed bool) {
	if ip := net.ParseIP(host); ip != nil {
		return host, !ip.IsLoopback()
	}
	if strings.EqualFold(host, "localhost") {
		return "127.0.0.1", false
	}
	return "", true
}

// wait collects the joins until all are there, a shard is lost, or the
// wait ends.
func (l *leader) wait(ctx context.Context) (time.Time, error) {
	b := l.b
	defer close(l.done)
	joined := map[int]net.Conn{}
	timer := time.NewTimer(b.wait())
	defer timer.Stop()
	for len(joined) < b.Spec.N-1 {
		select {
		case ev := <-l.events:
			if !ev.lost && joined[ev.k] != nil {
				ev.conn.SetWriteDeadline(time.Now().Add(time.Second))
				fmt.Fprintf(ev.conn, "ABORT wrong shard %s came twice\n", Spec{ev.k, b.Spec.N})
				ev.conn.Close()
				continue
			}
			if !ev.lost {
				joined[ev.k] = ev.conn
				continue
			}
			if joined[ev.k] != ev.conn {
				continue
			}
			delete(joined, ev.k)
			return time.Time{}, l.abort(joined, &BarrierError{ErrLostPeer, fmt.Sprintf("shard %s left before the start", Spec{ev.k, b.Spec.N})})
		case <-timer.C:
			var missing []string
			for k := 1; k < b.Spec.N; k++ {
				if joined[k] == nil {
					missing = append(missing, Spec{k, b.Spec.N}.String())
				}
			}
			return time.Time{}, l.abort(joined, &BarrierError{ErrNeverCame, fmt.Sprintf("shard %s did not come within %s", strings.Join(missing, ", "), b.wait())})
		case <-ctx.Done():
			l.abort(joined, &BarrierError{ErrLostPeer, "shard 0 was stopped"})
			return time.Time{}, ctx.Err()
		}
	}
	lead := b.Lead
	if lead <= 0 {
		lead = DefaultLead
	}
	l.mu.Lock()
	l.released, l.t0 = true, time.Now().Add(lead)
	l.mu.Unlock()
	for _, c := range joined {
		c.SetWriteDeadline(time.Now().Add(lead / 2))
		fmt.Fprintf(c, "START %d\n", l.t0.UnixNano())
		c.Close()
	}
	return l.t0, nil
}

// abort tells the shards joined that the barrier failed with err, stops
// listening and returns err.
func (l *leader) abort(joined map[int]net.Conn, err *BarrierError) error {
	l.mu.Lock()
	l.released = true
	l.mu.Unlock()
	l.b.Close()
	for _, c := range joined {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		fmt.Fprintf(c, "ABORT %s %s\n", kindName(err.Kind), err.Detail)
		c.Close()
	}
	return err
}

// accept takes connections until the listener closes.
func (l *leader) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.serve(c)
	}
}

// serve reads a shard's JOIN; a join before the start becomes an event
// (and the connection is watched for its loss), after it is late.
func (l *leader) serve(c net.Conn) {
	b := l.b
	c.SetReadDeadline(time.Now().Add(b.wait()))
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	f := strings.Fields(line)
	k, kerr := strconv.Atoi(field(f, 2))
	n, nerr := strconv.Atoi(field(f, 3))
	refuse := func(kind error, detail string) {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		fmt.Fprintf(c, "ABORT %s %s\n", kindName(kind), detail)
		c.Close()
	}
	switch {
	case len(f) != 4 || f[0] != "JOIN" || kerr != nil || nerr != nil:
		refuse(ErrWrongShard, fmt.Sprintf("shard 0 expected JOIN PLAN K N, not %q", strings.TrimSpace(line)))
		return
	case f[1] != b.Plan || n != b.Spec.N || k <= 0 || k >= n:
		refuse(ErrWrongShard, fmt.Sprintf("shard %d/%d of plan %s came to the barrier of shard 0/%d of plan %s", k, n, f[1], b.Spec.N, b.Plan))
		return
	}
	l.mu.Lock()
	released, t0 := l.released, l.t0
	l.mu.Unlock()
	if released {
		refuse(ErrLate, fmt.Sprintf("shard %d/%d came after the others started at %s", k, n, t0.UTC().Format(time.RFC3339Nano)))
		return
	}
	if !l.send(event{k: k, conn: c}) {
		return
	}
	// A shard sends nothing more: a read returns when its connection is
	// lost, or closed by wait at the start.
	_, _ = r.ReadByte()
	l.mu.Lock()
	released = l.released
	l.mu.Unlock()
	if !released {
		l.send(event{k: k, conn: c, lost: true})
	}
}

// send gives ev to wait, unless wait has returned (then the connection is
// closed).
func (l *leader) send(ev event) bool {
	select {
	case l.events <- ev:
		return true
	case <-l.done:
		ev.conn.Close()
		return false
	}
}

func field(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}
