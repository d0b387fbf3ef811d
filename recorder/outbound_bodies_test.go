package recorder

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOutboundStreamsChunks: the app reads the first chunk while the
// upstream is still blocked before the second.
func TestOutboundStreamsChunks(t *testing.T) {
	for _, tt := range []struct {
		name  string
		url   string
		http2 bool
	}{
		{"https", "https://api.test/stream", false},
		{"http", "http://plain.test/stream", false},
		{"https-h2", "https://api.test/stream", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newOBEnv(t)
			release := make(chan struct{})
			var releaseOnce sync.Once
			unblock := func() { releaseOnce.Do(func() { close(release) }) }
			defer unblock()
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, "first chunk\n")
				w.(http.Flusher).Flush()
				select {
				case <-release:
				case <-time.After(time.Minute):
				}
				io.WriteString(w, "second chunk\n")
			})
			e.https("api.test:443", handler)
			e.http("plain.test:80", handler)
			e.cfg.HTTP2 = tt.http2
			e.start()
			c := e.client()
			if tt.http2 {
				c.Transport.(*http.Transport).ForceAttemptHTTP2 = true
			}
			res, err := c.Get(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.ContentLength != -1 {
				t.Errorf("ContentLength %d, want -1 (streamed)", res.ContentLength)
			}
			first := make(chan error, 1)
			buf := make([]byte, len("first chunk\n"))
			go func() {
				_, err := io.ReadFull(res.Body, buf)
				first <- err
			}()
			select {
			case err := <-first:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the first chunk did not reach the app while the upstream held back the second")
			}
			if string(buf) != "first chunk\n" {
				t.Fatalf("first chunk %q", buf)
			}
			if n := len(e.sink.all()); n != 0 {
				t.Errorf("%d exchanges recorded before the response ended", n)
			}
			unblock()
			rest, err := io.ReadAll(res.Body)
			if err != nil || string(rest) != "second chunk\n" {
				t.Fatalf("rest %q, %v", rest, err)
			}
			ex := e.sink.wait(t, 1)[0]
			if string(ex.ResponseBody) != "first chunk\nsecond chunk\n" || ex.Error != "" {
				t.Errorf("recorded body %q, error %q", ex.ResponseBody, ex.Error)
			}
			wantProto := "HTTP/1.1"
			if tt.http2 {
				wantProto = "HTTP/2.0"
			}
			if res.Proto != wantProto || ex.Proto != wantProto {
				t.Errorf("app spoke %s, recorded %s, want %s", res.Proto, ex.Proto, wantProto)
			}
		})
	}
}

// patternBlock is the repeating unit of patternReader; its odd length
// keeps block boundaries off power-of-two buffer sizes.
var patternBlock = func() []byte {
	b := make([]byte, 1<<20+7)
	for i := range b {
		b[i] = byte(i ^ i>>8 ^ i>>16)
	}
	return b
}()

// patternReader yields n deterministic bytes.
type patternReader struct{ off, n int64 }

func (p *patternReader) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	k := int64(len(patternBlock))
	n := copy(b, patternBlock[p.off%k:])
	p.off += int64(n)
	return n, nil
}

func patternPrefix(n int64) []byte {
	b, _ := io.ReadAll(&patternReader{n: n})
	return b
}

// TestOutboundLargeBodies: 50 MB down and 16 MB up pass through intact; the
// recorded copies are capped.
func TestOutboundLargeBodies(t *testing.T) {
	const down, up, limit = 50 << 20, 16 << 20, 64 << 10
	e := newOBEnv(t)
	var upstreamGot atomic.Value
	e.https("api.test:443", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		upstreamGot.Store(fmt.Sprintf("%d:%x", n, h.Sum(nil)))
		w.Header().Set("Content-Length", fmt.Sprint(down))
		io.Copy(w, &patternReader{n: down})
	}))
	e.cfg.BodyLimit = limit
	e.start()

	wantDown := sha256.New()
	io.Copy(wantDown, &patternReader{n: down})
	wantUp := sha256.New()
	io.Copy(wantUp, &patternReader{n: up})

	res, err := e.client().Post("https://api.test/upload", "application/octet-stream", &patternReader{n: up})
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, res.Body)
	res.Body.Close()
	if err != nil || n != down || !bytes.Equal(got.Sum(nil), wantDown.Sum(nil)) {
		t.Fatalf("app received %d bytes (err %v), hash match %v; want %d intact", n, err, bytes.Equal(got.Sum(nil), wantDown.Sum(nil)), down)
	}
	if g, w := upstreamGot.Load(), fmt.Sprintf("%d:%x", up, wantUp.Sum(nil)); g != w {
		t.Errorf("upstream received %v, want %v", g, w)
	}
	ex := e.sink.wait(t, 1)[0]
	if ex.ResponseBodySize != down || !bytes.Equal(ex.ResponseBody, patternPrefix(limit)) || !ex.ResponseTruncated() {
		t.Errorf("recorded response: %d of %d bytes, prefix match %v", len(ex.ResponseBody), ex.ResponseBodySize, bytes.Equal(ex.ResponseBody, patternPrefix(limit)))
	}
	if ex.RequestBodySize != up || !bytes.Equal(ex.RequestBody, patternPrefix(limit)) || !ex.RequestTruncated() {
		t.Errorf("recorded request: %d of %d bytes", len(ex.RequestBody), ex.RequestBodySize)
	}
	if ex.Error != "" {
		t.Errorf("Error %q", ex.Error)
	}
}
