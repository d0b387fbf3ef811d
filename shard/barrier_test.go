package shard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// leader0 starts shard 0 of n on a loopback listener and returns its
// address and the channel of its outcome.
func leader0(t *testing.T, n int, wait time.Duration) (string, chan outcome, *Barrier) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &Barrier{Spec: Spec{0, n}, Plan: "p1", Addr: ln.Addr().String(), Wait: wait, Lead: 50 * time.Millisecond, Listener: ln}
	t.Cleanup(func() { b.Close() })
	ch := make(chan outcome, 1)
	go func() { t0, err := b.Start(context.Background()); ch <- outcome{t0, err} }()
	return ln.Addr().String(), ch, b
}

type outcome struct {
	t0  time.Time
	err error
}

func joiner(addr string, k, n int, plan string, wait time.Duration) chan outcome {
	ch := make(chan outcome, 1)
	b := &Barrier{Spec: Spec{k, n}, Plan: plan, Addr: addr, Wait: wait}
	go func() { t0, err := b.Start(context.Background()); ch <- outcome{t0, err} }()
	return ch
}

func wantBarrier(t *testing.T, who string, o outcome, kind error, code int) {
	t.Helper()
	var be *BarrierError
	if !errors.As(o.err, &be) || !errors.Is(o.err, kind) || be.ExitCode() != code {
		t.Errorf("%s: %v; want %v (exit %d)", who, o.err, kind, code)
	}
}

func TestBarrierStartsAllAtOneTime(t *testing.T) {
	addr, lead, _ := leader0(t, 3, 5*time.Second)
	// Shard 2 comes before shard 1, and before shard 0 listens is fine too.
	two := joiner(addr, 2, 3, "p1", 5*time.Second)
	time.Sleep(50 * time.Millisecond)
	one := joiner(addr, 1, 3, "p1", 5*time.Second)
	o0, o1, o2 := <-lead, <-one, <-two
	for i, o := range []outcome{o0, o1, o2} {
		if o.err != nil {
			t.Fatalf("shard %d: %v", i, o.err)
		}
	}
	if !o0.t0.Equal(o1.t0) || !o0.t0.Equal(o2.t0) {
		t.Errorf("start times %v %v %v; want one", o0.t0, o1.t0, o2.t0)
	}
	if !o0.t0.After(time.Now().Add(-50 * time.Millisecond)) {
		t.Errorf("T0 %v already long past", o0.t0)
	}
}

func TestBarrierJoinerWaitsForShard0(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // shard 0 not there yet
	one := joiner(addr, 1, 2, "p1", 5*time.Second)
	time.Sleep(500 * time.Millisecond)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port taken meanwhile: %v", err)
	}
	b := &Barrier{Spec: Spec{0, 2}, Plan: "p1", Addr: addr, Wait: 5 * time.Second, Listener: ln}
	defer b.Close()
	t0, err := b.Start(context.Background())
	o1 := <-one
	if err != nil || o1.err != nil || !t0.Equal(o1.t0) {
		t.Errorf("shard 0: %v %v, shard 1: %v %v", t0, err, o1.t0, o1.err)
	}
}

func TestBarrierLateJoiner(t *testing.T) {
	addr, lead, _ := leader0(t, 2, 5*time.Second)
	if o := <-joiner(addr, 1, 2, "p1", 5*time.Second); o.err != nil {
		t.Fatal(o.err)
	}
	if o := <-lead; o.err != nil {
		t.Fatal(o.err)
	}
	// A second shard 1 (a restarted pod) comes after the start.
	o := <-joiner(addr, 1, 2, "p1", 5*time.Second)
	wantBarrier(t, "late shard 1/2", o, ErrLate, ExitLate)
	if o.err != nil && !strings.Contains(o.err.Error(), "after the others started") {
		t.Errorf("late: %v", o.err)
	}
}

func TestBarrierLostPeer(t *testing.T) {
	addr, lead, _ := leader0(t, 4, 5*time.Second)
	two := joiner(addr, 2, 4, "p1", 5*time.Second)
	time.Sleep(100 * time.Millisecond)
	// Shard 1 joins, then dies before shard 3 comes.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "JOIN p1 1 4\n")
	time.Sleep(100 * time.Millisecond)
	c.Close()
	wantBarrier(t, "shard 0", <-lead, ErrLostPeer, ExitLostPeer)
	wantBarrier(t, "shard 2", <-two, ErrLostPeer, ExitLostPeer)
}

func TestBarrierShard0LostBeforeTheStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			bufio.NewReader(c).ReadString('\n')
			c.Close() // shard 0 dies
		}
	}()
	wantBarrier(t, "shard 1", <-joiner(ln.Addr().String(), 1, 2, "p1", 5*time.Second), ErrLostPeer, ExitLostPeer)
}

func TestBarrierShardThatNeverComes(t *testing.T) {
	addr, lead, _ := leader0(t, 3, 400*time.Millisecond)
	one := joiner(addr, 1, 3, "p1", 5*time.Second)
	o0 := <-lead
	wantBarrier(t, "shard 0", o0, ErrNeverCame, ExitNeverCame)
	if o0.err != nil && !strings.Contains(o0.err.Error(), "shard 2/3 did not come") {
		t.Errorf("shard 0: %v; want shard 2/3 named", o0.err)
	}
	wantBarrier(t, "shard 1", <-one, ErrNeverCame, ExitNeverCame)

	// Shard 0 itself never comes: the others give up after their wait.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	start := time.Now()
	wantBarrier(t, "shard 1 without shard 0", <-joiner(ln.Addr().String(), 1, 2, "p1", 600*time.Millisecond), ErrNeverCame, ExitNeverCame)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("gave up after %v; want about the wait", d)
	}
}

func TestBarrierTurnsAwayAnotherPlan(t *testing.T) {
	addr, lead, _ := leader0(t, 2, 5*time.Second)
	wantBarrier(t, "shard of plan p2", <-joiner(addr, 1, 2, "p2", 5*time.Second), ErrWrongShard, ExitWrongShard)
	wantBarrier(t, "shard 1 of 3", <-joiner(addr, 1, 3, "p1", 5*time.Second), ErrWrongShard, ExitWrongShard)
	// The right one still gets in.
	if o := <-joiner(addr, 1, 2, "p1", 5*time.Second); o.err != nil {
		t.Fatal(o.err)
	}
	if o := <-lead; o.err != nil {
		t.Fatal(o.err)
	}
}

// TestBarrierListenHost: shard 0 listens on loopback for an address on
// loopback or "localhost", and says so when it listens where the network
// reaches it (a pod's DNS name: every interface).
func TestBarrierListenHost(t *testing.T) {
	for _, c := range []struct {
		host, want string
		exposed    bool
	}{
		{"127.0.0.1", "127.0.0.1", false}, {"::1", "::1", false}, {"localhost", "127.0.0.1", false}, {"LocalHost", "127.0.0.1", false},
		{"replay-0.replay.default.svc.cluster.local", "", true}, {"0.0.0.0", "0.0.0.0", true}, {"10.1.2.3", "10.1.2.3", true},
	} {
		if got, exposed := listenHost(c.host); got != c.want || exposed != c.exposed {
			t.Errorf("listenHost(%q) = %q, %v; want %q, %v", c.host, got, exposed, c.want, c.exposed)
		}
	}
	// "localhost" listens on loopback, without a warning.
	var warned []error
	b := &Barrier{Spec: Spec{0, 2}, Plan: "p1", Addr: "localhost:0", Wait: 100 * time.Millisecond, Warn: func(err error) { warned = append(warned, err) }}
	defer b.Close()
	if _, err := b.Start(context.Background()); !errors.Is(err, ErrNeverCame) {
		t.Errorf("shard 0 alone: %v, want %v", err, ErrNeverCame)
	}
	if b.ln == nil || !strings.HasPrefix(b.ln.Addr().String(), "127.0.0.1:") || len(warned) != 0 {
		t.Errorf("listened on %v, warned %v; want 127.0.0.1, no warning", b.ln.Addr(), warned)
	}
}
