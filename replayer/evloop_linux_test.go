//go:build linux

package replayer

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// rawTarget serves each connection with handle, on loopback.
func rawTarget(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readRequest reads a request without a body up to its blank line.
func readRequest(br *bufio.Reader) error {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if line == "\r\n" {
			return nil
		}
	}
}

var portRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// outcome is what a result says of the answer, for comparing the paths.
func outcome(r *snapshots.Result) string {
	return fmt.Sprintf("%d %s %s %s status=%d rec=%d bytes=%d err=%q phase=%s trace=%v sent=%v",
		r.ExchangeID, r.Endpoint, r.Method, r.URL, r.Status, r.RecordedStatus, r.Bytes,
		portRE.ReplaceAllString(r.Error, "ADDR"), r.Phase, len(r.TraceID) == 32,
		!r.Sent.IsZero() && !r.Done.Before(r.Sent) && !r.Sent.Before(r.Intended))
}

// runBoth runs plan with cfg on the event loops and on goroutines and
// returns each run's outcomes, sorted.
func runBoth(t *testing.T, cfg Config, plan LoadPlan) (loop, gor []string) {
	t.Helper()
	for _, noLoop := range []bool{false, true} {
		r := newReplayer(t, cfg)
		r.noLoop = noLoop
		var s sink
		if _, err := r.Run(context.Background(), plan, &s); err != nil {
			t.Fatal(err)
		}
		served := r.loopServed.Load()
		if noLoop != (served == 0) {
			t.Fatalf("noLoop %v: %d requests on the event loops", noLoop, served)
		}
		var out []string
		for _, res := range s.all() {
			out = append(out, outcome(res))
		}
		slices.Sort(out)
		if noLoop {
			gor = out
		} else {
			loop = out
		}
	}
	return loop, gor
}

func sameOutcomes(t *testing.T, cfg Config, plan LoadPlan, want func(*testing.T, []string)) {
	t.Helper()
	loop, gor := runBoth(t, cfg, plan)
	if !slices.Equal(loop, gor) {
		t.Errorf("event loop:\n%s\ngoroutines:\n%s", strings.Join(loop, "\n"), strings.Join(gor, "\n"))
	}
	if want != nil {
		want(t, loop)
	}
}

func allContain(sub string) func(*testing.T, []string) {
	return func(t *testing.T, out []string) {
		for _, o := range out {
			if !strings.Contains(o, sub) {
				t.Errorf("%s: want %q in it", o, sub)
			}
		}
	}
}

func TestLoopIsTheClosedPath(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello, world\n")
	}))
	defer srv.Close()
	r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(3)})
	var s sink
	for range 2 { // the second run takes the first's connections from the pool
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 4, Iterations: 10}, &s); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.loopServed.Load(); n != 60 {
		t.Fatalf("%d requests on the event loops, want 60", n)
	}
	for _, res := range s.all() {
		if res.Status != 200 || res.Bytes != 13 || res.Error != "" {
			t.Fatalf("result %+v", res)
		}
	}
	// Stages, NetHTTP and a SQL counter keep it on goroutines.
	if r.loopable(LoadPlan{VUs: 2, Stages: []Stage{{Duration: time.Second, Target: 2}}}) {
		t.Error("stages on the event loops")
	}
	if newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(1), NetHTTP: true}).loopable(LoadPlan{VUs: 1}) {
		t.Error("NetHTTP on the event loops")
	}
}

func TestLoopChunkedLargeAndClose(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 64<<10) // 1 MiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/items/1": // chunked
			for i := range 5 {
				fmt.Fprintf(w, "chunk %d;", i)
				w.(http.Flusher).Flush()
			}
		case "/items/2": // large, with a length
			w.Header().Set("Content-Length", fmt.Sprint(len(big)))
			io.WriteString(w, big)
		case "/items/3": // keep-alive off
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		default:
			w.WriteHeader(404)
		}
	}))
	defer srv.Close()
	cfg := Config{Target: srv.URL, Exchanges: exchanges(4), Responses: &responses{}}
	sameOutcomes(t, cfg, LoadPlan{VUs: 3, Iterations: 6}, func(t *testing.T, out []string) {
		for _, o := range out {
			ok := strings.Contains(o, "status=200 rec=200 bytes=40 ") || strings.Contains(o, "bytes=1048576 ") ||
				strings.Contains(o, "bytes=3 ") || strings.Contains(o, "status=404")
			if !ok || !strings.Contains(o, `err=""`) {
				t.Errorf("unexpected %s", o)
			}
		}
	})
}

func TestLoopCaptureSameAsGoroutines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.Path)
	}))
	defer srv.Close()
	var hashes [2][]snapshots.ResponseHash
	var samples [2][]string
	for i, noLoop := range []bool{false, true} {
		rs := &responses{}
		r := newReplayer(t, Config{Target: srv.URL, Exchanges: exchanges(3), Responses: rs})
		r.noLoop = noLoop
		if _, err := r.Run(context.Background(), LoadPlan{VUs: 2, Iterations: 20}, &sink{}); err != nil {
			t.Fatal(err)
		}
		hashes[i] = r.ResponseHashes()
		for _, s := range rs.all() {
			samples[i] = append(samples[i], fmt.Sprintf("%d %d %s %s", s.ExchangeID, s.Status, s.Header.Get("Content-Type"), s.Body))
		}
		slices.Sort(samples[i])
	}
	if !slices.Equal(samples[0], samples[1]) || len(samples[0]) == 0 {
		t.Errorf("samples: loop %q, goroutines %q", samples[0], samples[1])
	}
	if fmt.Sprint(hashes[0]) != fmt.Sprint(hashes[1]) || len(hashes[0]) == 0 {
		t.Errorf("hashes: loop %v, goroutines %v", hashes[0], hashes[1])
	}
}

func TestLoopTimeoutNeverAnswers(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.Copy(io.Discard, br) // never answers
	})
	cfg := Config{Target: url, Exchanges: exchanges(2), Timeout: 150 * time.Millisecond}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 2}, allContain(`err="timeout: no complete response within 150ms"`))
}

func TestLoopSlowAnswerWithinTimeout(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		for readRequest(br) == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n01234")
			time.Sleep(30 * time.Millisecond)
			io.WriteString(c, "56789")
		}
	})
	cfg := Config{Target: url, Exchanges: exchanges(2), Timeout: time.Second}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 2}, allContain(`status=200 rec=200 bytes=10 err=""`))
}

func TestLoopServerClosesWithoutAnswer(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) { readRequest(br) })
	cfg := Config{Target: url, Exchanges: exchanges(2)}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 3},
		allContain(`err="connection closed by the target before a complete response (no response)"`))
}

func TestLoopServerClosesMidAnswer(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
	})
	cfg := Config{Target: url, Exchanges: exchanges(2)}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 2},
		allContain(`status=0 rec=200 bytes=0 err="connection closed by the target before a complete response"`))
}

// A server that closes each connection after one answer, without saying
// so: the next request on it fails before any byte and is sent again on a
// new connection.
func TestLoopServerClosesIdleConnection(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	cfg := Config{Target: url, Exchanges: exchanges(2)}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 5}, allContain(`status=200 rec=200 bytes=2 err=""`))
}

func TestLoopBodyUntilCloseAndEarlyHints(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")
		io.WriteString(c, "HTTP/1.1 200 OK\r\nX-Long: "+strings.Repeat("x", 20<<10)+"\r\n\r\nuntil ")
		time.Sleep(5 * time.Millisecond)
		io.WriteString(c, "the close")
	})
	cfg := Config{Target: url, Exchanges: exchanges(2)}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 2}, allContain(`status=200 rec=200 bytes=15 err=""`))
}

func TestLoopMalformedAndRefused(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTX/1.1 200 OK\r\n\r\n")
	})
	cfg := Config{Target: url, Exchanges: exchanges(1)}
	sameOutcomes(t, cfg, LoadPlan{VUs: 1, Iterations: 2}, allContain(`malformed HTTP response: status line`))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg = Config{Target: "http://" + addr, Exchanges: exchanges(1)}
	sameOutcomes(t, cfg, LoadPlan{VUs: 2, Iterations: 2}, allContain(`connect: connection refused`))
}

func TestLoopCanceled(t *testing.T) {
	url := rawTarget(t, func(c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.Copy(io.Discard, br)
	})
	r := newReplayer(t, Config{Target: url, Exchanges: exchanges(1)})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var s sink
	start := time.Now()
	_, err := r.Run(ctx, LoadPlan{VUs: 3, Duration: time.Minute}, &s)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s", err, time.Since(start))
	}
	if n := len(s.all()); n != 0 {
		t.Errorf("%d results of canceled requests", n)
	}
}
