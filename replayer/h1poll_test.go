package replayer

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// readSyscalls returns how many read system calls the process has made
// (/proc/self/io), or skips the test where that is not available.
func readSyscalls(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io:", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscr: "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no syscr in /proc/self/io")
	return 0
}

// TestOneReadPerRequest: the fast path writes a request and waits for the
// answer before reading, so that each request costs one read system call,
// not a read that finds nothing and then one that finds the answer. The
// target reads each request with one blocking read and answers 50µs
// later, so the process makes two reads per request in all (three before).
func TestOneReadPerRequest(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		f, err := c.(*net.TCPConn).File()
		c.Close()
		if err != nil {
			return
		}
		defer f.Close()
		fd := int(f.Fd()) // blocking mode: one read per request, no poller
		buf := make([]byte, 64<<10)
		resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		for {
			n, err := syscall.Read(fd, buf)
			if n <= 0 || err != nil {
				return
			}
			// Answer after 50µs, as a target does: not before the client
			// looks for the answer.
			for t0 := time.Now(); time.Since(t0) < 50*time.Microsecond; {
			}
			if _, err := syscall.Write(fd, resp); err != nil {
				return
			}
		}
	}()
	r := newReplayer(t, Config{Target: "http://" + l.Addr().String(), Exchanges: exchanges(1), MaxInFlight: 1})
	const n = 2000
	var s countSink
	r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: 10}, &s) // connect
	before := readSyscalls(t)
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: n}, &s); err != nil {
		t.Fatal(err)
	}
	perReq := float64(readSyscalls(t)-before) / n
	if s.n.Load() != n+10 {
		t.Fatalf("%d results, want %d", s.n.Load(), n+10)
	}
	if perReq > 2.5 {
		t.Errorf("%.2f read system calls per request (client and target), want 2 (one each)", perReq)
	}
	if testing.Verbose() {
		t.Logf("%.2f read system calls per request", perReq)
	}
}

// TestLargeBodyAfterShortWrite: a request too big for the socket buffer
// goes out in part at once and the rest by a waiting write, then its answer
// is read.
func TestLargeBodyAfterShortWrite(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 16<<20)
	got := make(chan int, 1)
	srv := newTarget(t, nil)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond) // let the client's buffer fill
		n, _ := io.Copy(io.Discard, bufio.NewReaderSize(r.Body, 1024))
		got <- int(n)
		io.WriteString(w, "done")
	})
	ex := exchanges(1)
	ex[0].Method, ex[0].RequestBody = "POST", body
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: ex, Timeout: 20 * time.Second})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{}, &s); err != nil {
		t.Fatal(err)
	}
	res := s.all()[0]
	if res.Status != 200 || res.Bytes != 4 || res.Error != "" {
		t.Errorf("status %d bytes %d error %q; want 200, 4 bytes", res.Status, res.Bytes, res.Error)
	}
	if n := <-got; n != len(body) {
		t.Errorf("target read %d bytes of the body, want %d", n, len(body))
	}
}

// TestTimeoutAfterManyRequests: a worker sets its connection's deadline
// only every so many requests (arm); a request the target never answers
// still times out after its timeout, not before and not much later.
func TestTimeoutAfterManyRequests(t *testing.T) {
	const fast = 300
	resps := make([]string, fast)
	for i := range resps {
		resps[i] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	}
	resps = append(resps, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n") // no body: the client waits
	srv := newRawServer(t, resps...)
	const timeout = 400 * time.Millisecond
	r := newReplayer(t, Config{Target: srv.url(), Exchanges: exchanges(1), MaxInFlight: 1, Timeout: timeout})
	var s sink
	if _, err := r.Run(context.Background(), LoadPlan{VUs: 1, Iterations: fast + 1}, &s); err != nil {
		t.Fatal(err)
	}
	all := s.all()
	last := all[len(all)-1]
	took := last.Done.Sub(last.Sent)
	if !strings.Contains(last.Error, "timeout") || took < timeout || took > timeout+timeout/2 {
		t.Errorf("last request: error %q after %s; want a timeout after %s", last.Error, took, timeout)
	}
	for _, x := range all[:fast] {
		if x.Error != "" {
			t.Fatalf("request failed: %q", x.Error)
		}
	}
}
