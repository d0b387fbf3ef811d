package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/replaykit/replay/internal/syncbuf"
	"github.com/replaykit/replay/mock"
	"github.com/replaykit/replay/snapshots"
)

// TestMockServeDecodesForClient: `replay mock --serve` answers a recording
// kept gzip-encoded as recorded to a client that accepts gzip, and decoded
// (no Content-Encoding, the decoded Content-Length) to one that sent no
// Accept-Encoding, as plain curl does.
func TestMockServeDecodesForClient(t *testing.T) {
	plain := strings.Repeat(`{"sku":"SKU-1","name":"widget"}`, 200)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(plain))
	zw.Close()
	snap := filepath.Join(t.TempDir(), "gzip.snap")
	w, err := snapshots.Create(snap, snapshots.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.AddExchange(&snapshots.Exchange{Direction: snapshots.Outbound, Protocol: "https", Service: "catalog.test:443",
		Start: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Duration: time.Millisecond, Method: "GET",
		URL: "https://catalog.test/products", RequestHeader: http.Header{"Accept-Encoding": {"gzip"}}, Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"application/json"}, "Content-Encoding": {"gzip"}, "Content-Length": {strconv.Itoa(gz.Len())}},
		ResponseBody:   gz.Bytes(), ResponseBodySize: int64(gz.Len())})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncbuf.Buffer
	opts := &mockOptions{snapshot: snap, caDir: t.TempDir(), serve: []string{"127.0.0.1:0=catalog.test:443"},
		behaviour: mockBehaviour{onMiss: "error", timing: "none"}, match: "template", stdout: &stdout, stderr: &stderr}
	ready := make(chan *mock.Listening, 1)
	opts.onReady = func(r *mock.Listening) { ready <- r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mockRun(ctx, opts) }()
	defer func() { cancel(); <-done }()
	var base string
	select {
	case r := <-ready:
		base = "http://" + r.Serve[0].Addr().String()
	case err := <-done:
		t.Fatalf("mock: %v; stderr %s", err, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("mock did not start within 60s")
	}
	// DisableCompression: the transport neither asks for gzip nor decodes.
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for _, tt := range []struct {
		accept, encoding string
		body             []byte
	}{
		{"", "", []byte(plain)},
		{"gzip", "gzip", gz.Bytes()},
	} {
		req, _ := http.NewRequest("GET", base+"/products", nil)
		if tt.accept != "" {
			req.Header.Set("Accept-Encoding", tt.accept)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Equal(body, tt.body) || resp.Header.Get("Content-Encoding") != tt.encoding || resp.ContentLength != int64(len(tt.body)) {
			t.Errorf("Accept-Encoding %q: %d, %d bytes, Content-Encoding %q, Content-Length %d; want 200, %d bytes, %q",
				tt.accept, resp.StatusCode, len(body), resp.Header.Get("Content-Encoding"), resp.ContentLength, len(tt.body), tt.encoding)
		}
	}
}
