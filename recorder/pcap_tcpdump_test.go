package recorder

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// realHandler is the server the real-capture test talks to: small and large
// bodies, chunked and gzip responses, HEAD, a request body, a 404.
func realHandler(gz []byte) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q}`, r.PathValue("id"))
	})
	mux.HandleFunc("POST /orders", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"received":%d}`, len(body))
	})
	mux.HandleFunc("GET /big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.Write(bytes.Repeat([]byte("0123456789"), 10000))
	})
	mux.HandleFunc("GET /stream", func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "part %d\n", i)
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("GET /gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz)
	})
	return mux
}

// sentExchange is what the client sent and received.
type sentExchange struct {
	Method, URL, TraceID string
	RequestBody          string
	Status               int
	ResponseBody         []byte
}

// talk sends requests on two keep-alive connections, one after the other,
// and returns what went over the wire.
func talk(t *testing.T, base string) []sentExchange {
	var sent []sentExchange
	do := func(c *http.Client, method, path, body, traceparent string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body == "" {
			req.Body = nil
		}
		if traceparent != "" {
			req.Header.Set("Traceparent", traceparent)
		}
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, sentExchange{Method: method, URL: base + path, TraceID: TraceID(traceparent),
			RequestBody: body, Status: res.StatusCode, ResponseBody: got})
	}
	// DisableCompression: the client must see the bytes as sent, gzip included.
	newClient := func() *http.Client {
		return &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}}
	}
	c := newClient()
	do(c, "GET", "/orders/17", "", testTraceparent)
	do(c, "POST", "/orders", `{"item":"book","qty":2}`, "")
	do(c, "GET", "/big", "", "")
	do(c, "GET", "/stream", "", "")
	do(c, "GET", "/gz", "", "")
	do(c, "HEAD", "/orders/18", "", "")
	do(c, "GET", "/missing", "", "")
	c.CloseIdleConnections()
	c = newClient()
	do(c, "GET", "/orders/19", "", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	do(c, "POST", "/orders", strings.Repeat("x", 5000), "")
	c.CloseIdleConnections()
	return sent
}

// startTcpdump captures the traffic of port on iface into file until the
// returned function is called.
func startTcpdump(t *testing.T, tcpdump, iface string, port int, file string) (stop func()) {
	t.Helper()
	// No --immediate-mode: with it, the "any" device drops packets here.
	// -U writes each packet as soon as tcpdump has it.
	cmd := exec.Command(tcpdump, "-i", iface, "-n", "-U", "-s", "0", "-w", file, fmt.Sprintf("tcp port %d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	listening := make(chan struct{})
	var (
		mu      sync.Mutex
		errText strings.Builder
	)
	text := func() string {
		mu.Lock()
		defer mu.Unlock()
		return errText.String()
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			errText.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "listening on") {
				close(listening)
				break
			}
		}
		io.Copy(io.Discard, stderr)
		done <- cmd.Wait()
	}()
	select {
	case <-listening:
	case err := <-done:
		msg := text()
		if strings.Contains(msg, "ermission") || strings.Contains(msg, "not permitted") {
			t.Skipf("tcpdump cannot capture here (it needs root or CAP_NET_RAW): %s", msg)
		}
		t.Fatalf("tcpdump exited before listening: %v: %s", err, msg)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("tcpdump did not start listening within 60s: %s", text())
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// waitCaptured waits until file holds n complete exchanges: tcpdump writes
// each packet as it gets it, but gets them a little after they are sent.
func waitCaptured(t *testing.T, file string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var (
			complete   int
			incomplete []string
		)
		data, err := os.ReadFile(file)
		if err == nil {
			sink := &pcapSink{}
			if _, err = ImportPcap(context.Background(), bytes.NewReader(data), sink, PcapConfig{}); err == nil {
				for _, e := range sink.exchanges {
					if e.Error == "" {
						complete++
					} else {
						incomplete = append(incomplete, e.Method+" "+e.URL+": "+e.Error)
					}
				}
			}
		}
		if complete >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60s the capture holds %d of %d complete exchanges (last error: %v; incomplete: %q)", complete, n, err, incomplete)
		}
		time.Sleep(50 * time.Millisecond) // polling a file another process writes
	}
}

// TestImportPcapTcpdump captures a real Go client talking to a real server
// with tcpdump, on lo (Ethernet frames) and on the "any" device (Linux
// cooked v2), and checks the import against what the client sent and got.
// It is skipped, alone, when tcpdump is not installed. With
// REPLAY_PCAP_KEEP=DIR it keeps the captures in DIR: that is how
// testdata/pcap was made.
func TestImportPcapTcpdump(t *testing.T) {
	tcpdump, err := exec.LookPath("tcpdump")
	if err != nil {
		t.Skip("tcpdump is not installed (apt-get install tcpdump); skipping the real-capture test")
	}
	gz := gzipped(t, strings.Repeat("a gzip body stays gzip\n", 200))
	for _, tt := range []struct {
		iface    string
		linkType uint32
	}{{"lo", linkEthernet}, {"any", linkLinuxSLL2}} {
		t.Run(tt.iface, func(t *testing.T) {
			srv := httptest.NewServer(realHandler(gz))
			defer srv.Close()
			port := srv.Listener.Addr().(*net.TCPAddr).Port
			file := filepath.Join(t.TempDir(), tt.iface+".pcap")
			stop := startTcpdump(t, tcpdump, tt.iface, port, file)
			before := time.Now()
			sent := talk(t, srv.URL)
			after := time.Now()
			waitCaptured(t, file, len(sent))
			stop()

			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if lt := binary.LittleEndian.Uint32(data[20:24]); lt != tt.linkType {
				t.Fatalf("tcpdump -i %s wrote link type %d, want %d", tt.iface, lt, tt.linkType)
			}
			if dir := os.Getenv("REPLAY_PCAP_KEEP"); dir != "" {
				os.WriteFile(filepath.Join(dir, tt.iface+".pcap"), data, 0o644)
			}
			sink, st := importPcap(t, data, PcapConfig{Ports: []int{port}})
			var got []sentExchange
			for _, e := range sink.sorted() {
				got = append(got, sentExchange{Method: e.Method, URL: e.URL, TraceID: e.TraceID,
					RequestBody: string(e.RequestBody), Status: e.Status, ResponseBody: e.ResponseBody})
				service := srv.Listener.Addr().String()
				if e.Error != "" || e.Service != service || e.Start.Before(before.Add(-time.Second)) || e.Start.After(after.Add(time.Second)) ||
					e.Duration <= 0 || e.ResponseBodySize != int64(len(e.ResponseBody)) {
					t.Errorf("%s %s: error %q, service %s, start %v (client ran %v to %v), duration %v, body %d of %d bytes",
						e.Method, e.URL, e.Error, e.Service, e.Start, before, after, e.Duration, len(e.ResponseBody), e.ResponseBodySize)
				}
			}
			if diff := cmp.Diff(sent, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("imported exchanges differ from what the client saw (-sent +imported):\n%s", diff)
			}
			if st.Connections != 2 || st.Ports[0] != port {
				t.Errorf("stats = %+v, want 2 connections on port %d", st, port)
			}
		})
	}
}

// TestImportPcapRealCaptures imports captures tcpdump 4.99.3 (libpcap
// 1.10.3) wrote of TestImportPcapTcpdump's traffic, kept under testdata so
// that they are read where tcpdump is not installed: lo.pcap has Ethernet
// frames, any.pcap Linux cooked v2 ones.
func TestImportPcapRealCaptures(t *testing.T) {
	want := []string{
		`GET /orders/17 200 {"id":"17"} trace 4bf92f3577b34da6a3ce929d0e0e4736`,
		`POST /orders {"item":"book","qty":2} 201 {"received":23}`,
		"GET /big 200 100000 bytes",
		"GET /stream 200 part 0\npart 1\npart 2\n",
		"GET /gz 200 74 bytes of gzip",
		"HEAD /orders/18 200 ",
		"GET /missing 404 404 page not found\n",
		`GET /orders/19 200 {"id":"19"} trace 0af7651916cd43dd8448eb211c80319c`,
		`POST /orders 5000 bytes 201 {"received":5000}`,
	}
	describe := func(b []byte) string {
		switch {
		case len(b) > 1000:
			return fmt.Sprintf("%d bytes", len(b))
		case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
			return fmt.Sprintf("%d bytes of gzip", len(b))
		}
		return string(b)
	}
	for _, name := range []string{"lo.pcap", "any.pcap"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "pcap", name))
			if err != nil {
				t.Fatal(err)
			}
			sink, st := importPcap(t, data, PcapConfig{})
			var got []string
			for _, e := range sink.sorted() {
				u, _ := url.Parse(e.URL)
				s := e.Method + " " + u.Path
				if e.RequestBodySize > 0 {
					s += " " + describe(e.RequestBody)
				}
				s += fmt.Sprintf(" %d %s", e.Status, describe(e.ResponseBody))
				if e.TraceID != "" {
					s += " trace " + e.TraceID
				}
				if e.Error != "" || e.Service != "127.0.0.1:"+fmt.Sprint(st.Ports[0]) || e.Duration <= 0 {
					t.Errorf("%s: error %q, service %s, duration %v", s, e.Error, e.Service, e.Duration)
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("exchanges (-want +got):\n%s", diff)
			}
			if st.Connections != 2 || len(st.Ports) != 1 || st.Gaps != 0 || st.Incomplete != 0 {
				t.Errorf("stats = %+v, want 2 complete connections on one port", st)
			}
		})
	}
}
