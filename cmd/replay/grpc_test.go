package main

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/replaykit/replay/internal/grpctest"
	"github.com/replaykit/replay/recorder"
	"github.com/replaykit/replay/snapshots"
)

// recordInteropSnapshot records grpc-go's interop client running every
// case that needs only the server, through replay's recorder in front of
// an interop server, into a snapshot; it returns the snapshot, the number
// of calls recorded per method, and of those the calls the client
// canceled at once (cancel_after_begin: the cancel may overtake the call,
// on replay as when recorded).
func recordInteropSnapshot(t *testing.T) (string, map[string]int, map[string]int) {
	t.Helper()
	srv := grpctest.Start(t, nil)
	path := filepath.Join(t.TempDir(), "grpc.snap")
	w, err := snapshots.Create(path, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := recorder.NewInbound(recorder.InboundConfig{Target: &url.URL{Scheme: "http", Host: srv.Addr}, Sink: w})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: in, Protocols: recorder.InboundProtocols()}
	go hs.Serve(l)
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range grpctest.Cases {
		c.Run(ctx, cc)
	}
	cc.Close()
	time.Sleep(300 * time.Millisecond) // the last calls end in the recorder after the client
	hs.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := snapshots.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	perMethod, canceled := map[string]int{}, map[string]int{}
	seen := map[string]bool{}
	for _, c := range srv.Calls() {
		seen[c.Method] = true
	}
	for e, err := range s.Exchanges(ctx, snapshots.Filter{}) {
		if err != nil {
			t.Fatal(err)
		}
		m, ok := snapshots.GRPCMethod(e.Endpoint)
		if !ok || !seen[m] {
			continue // calls to methods the server lacks reach no handler of it
		}
		perMethod[m]++
		if code, _, ok := e.GRPCStatus(); code == 1 || !ok && e.Error != "" {
			canceled[m]++
		}
	}
	return path, perMethod, canceled
}

// serverCalls waits until srv has seen n calls (or a second passed) and
// returns its calls per method.
func serverCalls(srv *grpctest.Server, n int) map[string]int {
	for range 50 {
		if len(srv.Calls()) >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	m := map[string]int{}
	for _, c := range srv.Calls() {
		m[c.Method]++
	}
	return m
}

func total(m map[string]int) (n int) {
	for _, v := range m {
		n += v
	}
	return n
}

// `replay run` of a recording of grpc-go's interop client replays every
// call once to a fresh interop server, each with its recorded status, in
// the closed and the open model.
func TestRunReplaysGRPC(t *testing.T) {
	snap, want, canceled := recordInteropSnapshot(t)
	s, err := snapshots.Open(snap)
	if err != nil {
		t.Fatal(err)
	}
	exchanges, _, err := s.Counts(context.Background())
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, load := range [][]string{{"--vus", "4", "--conns", "2"}, {"--rate", "200/s", "--iterations", "1"}} {
		srv := grpctest.Start(t, nil)
		args := append([]string{"--snapshot", snap, "--target", "http://" + srv.Addr, "--out", filepath.Join(t.TempDir(), "g.run"), "--format", "json"}, load...)
		code, stdout, stderr := replayRun(t, args...)
		if code != 0 {
			t.Fatalf("replay run %v: exit %d\n%s\n%s", load, code, stdout, stderr)
		}
		v := decodeRunJSON(t, stdout)
		if v.Requests != exchanges || v.Failed != 0 {
			t.Errorf("%v: %d requests, %d failed; want the %d recorded, none failed", load, v.Requests, v.Failed, exchanges)
		}
		got := serverCalls(srv, total(want))
		for m := range want {
			if got[m] > want[m] || got[m] < want[m]-canceled[m] {
				t.Errorf("%v: the server saw %v, the recording holds %v (%v canceled at once)", load, got, want, canceled)
				break
			}
		}
		if len(got) != len(want) {
			t.Errorf("%v: the server saw %v, the recording holds %v", load, got, want)
		}
	}
}

// `replay run --token-cmd` of a recording of grpc-go's interop client
// (which sent no credential) to a server that asks every call for a bearer
// token: each call carries the token as its authorization metadata and
// none is refused; without --token-cmd, calls are.
func TestRunGRPCToken(t *testing.T) {
	snap, _, _ := recordInteropSnapshot(t)
	run := func(token ...string) (*grpctest.Server, runJSON) {
		srv := grpctest.StartWith(t, grpctest.Options{Token: "s3cret"})
		args := append([]string{"--snapshot", snap, "--target", "http://" + srv.Addr, "--vus", "2",
			"--out", filepath.Join(t.TempDir(), "g.run"), "--format", "json"}, token...)
		code, stdout, stderr := replayRun(t, args...)
		if code != exitOK && code != exitRegression {
			t.Fatalf("replay run: exit %d\n%s\n%s", code, stdout, stderr)
		}
		return srv, decodeRunJSON(t, stdout)
	}
	refused := func(srv *grpctest.Server) (n int) {
		for _, c := range srv.Calls() {
			if c.Code == 16 { // UNAUTHENTICATED
				n++
			}
		}
		return n
	}
	srv, v := run("--token-cmd", "echo s3cret", "--token-header", "Authorization")
	if n := refused(srv); v.Failed != 0 || n != 0 || len(srv.Calls()) == 0 {
		t.Errorf("with the token: %d of %d calls failed, the server refused %d of %d", v.Failed, v.Requests, n, len(srv.Calls()))
	}
	srv, v = run()
	if n := refused(srv); v.Failed == 0 || n == 0 {
		t.Errorf("without a token: %d of %d calls failed, the server refused %d; want some", v.Failed, v.Requests, n)
	}
}
