package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// bigStock is the number of distinct upstream URLs the big snapshot's
// outbound calls use: a catalogue the app looks items up in.
const bigStock = 20000

// bigsnap writes a snapshot of n inbound exchanges (GET /items/{i}, each
// answered with about 700 bytes of JSON) and one outbound call each (GET
// http://inventory.bench/stock/{i mod bigStock}), as `benchtool app` makes
// them, with the snapshots writer.
func bigsnap(args []string) error {
	if len(args) != 2 {
		return errors.New("want N FILE")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n <= 0 {
		return fmt.Errorf("N %q: want a positive number", args[0])
	}
	w, err := snapshots.Create(args[1], snapshots.Options{})
	if err != nil {
		return err
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		start := t0.Add(time.Duration(i) * time.Millisecond)
		id := w.NewID()
		w.AddExchange(&snapshots.Exchange{ID: id, Direction: snapshots.Inbound, Protocol: "http", Service: "app.bench:80",
			Start: start, Duration: 2 * time.Millisecond, Method: "GET", URL: fmt.Sprintf("http://app.bench/items/%d", i),
			Proto: "HTTP/1.1", RequestHeader: http.Header{"Accept": {"application/json"}, "User-Agent": {"bench"}},
			Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody: itemBody(i, stockBody(i%bigStock)), ResponseBodySize: int64(len(itemBody(i, stockBody(i%bigStock)))),
			Endpoint: "GET /items/{id}"})
		sb := stockBody(i % bigStock)
		w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "http", Service: "inventory.bench:80",
			Start: start.Add(200 * time.Microsecond), Duration: time.Millisecond, Method: "GET",
			URL: fmt.Sprintf("http://inventory.bench/stock/%d", i%bigStock), Proto: "HTTP/1.1",
			Status: 200, ResponseHeader: http.Header{"Content-Type": {"application/json"}},
			ResponseBody: sb, ResponseBodySize: int64(len(sb)), ParentID: id})
	}
	return w.Close()
}

// stockBody is the inventory's answer for item k.
func stockBody(k int) []byte {
	return fmt.Appendf(nil, `{"sku":"SKU-%08d","warehouse":"north-%d","available":%d}`, k, k%7, k%113)
}

// itemBody is the app's answer for item i: about 700 bytes of JSON around
// the stock it got.
func itemBody(i int, stock []byte) []byte {
	desc := strings.Repeat("a sturdy item for every day use, ", 16)
	return fmt.Appendf(nil, `{"id":%d,"name":"item %d","price_cents":%d,"stock":%s,"description":%q}`, i, i, 100+i%9000, stock, desc)
}

// app is the build the big snapshot was "recorded" from: it listens on
// $PORT, and answers GET /items/{i} after fetching the stock from
// inventory.bench through the proxy of its environment (replay's mock).
func app() error {
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/items/"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		resp, err := client.Get(fmt.Sprintf("http://inventory.bench/stock/%d", i%bigStock))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		stock, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		w.Header().Set("Content-Type", "application/json")
		w.Write(itemBody(i, stock))
	})
	return http.Serve(l, h)
}

// rss runs a command and prints its peak resident memory (VmHWM of
// /proc/PID/status, read every 20 ms until it exits), its wall time and
// its CPU time (user + system, with the children it waited for).
func rss(args []string) error {
	if len(args) == 0 {
		return errors.New("want COMMAND [ARG...]")
	}
	cmd := exec.CommandContext(context.Background(), args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			// rusage's maxrss is the exact peak (of the process and the
			// children it waited for); VmHWM the last one read.
			var maxrss int64
			var cpu time.Duration
			if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
				maxrss = ru.Maxrss
				cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
			}
			fmt.Fprintf(os.Stderr, "benchtool rss: VmHWM %d MB, maxrss (with waited children) %d MB, wall %.1f s, CPU (with waited children) %.1f s\n",
				peak/1024, maxrss/1024, time.Since(start).Seconds(), cpu.Seconds())
			return err
		case <-tick.C:
			if v := vmHWM(cmd.Process.Pid); v > peak {
				peak = v
			}
		}
	}
}

// vmHWM returns the peak resident set of pid in KiB, 0 when unknown.
func vmHWM(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
