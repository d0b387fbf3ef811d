package recorder

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// NewInboundTransport returns the transport an Inbound uses when none is
// configured: no proxy from the environment (the app is reached directly),
// a large idle pool so that keep-alive connections are reused under high
// concurrency (Go's default keeps 2 per host), and no transparent
// decompression, so that bodies are recorded and forwarded as sent. tlsConfig
// may be nil.
func NewInboundTransport(tlsConfig *tls.Config) *http.Transport {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:           d.DialContext,
		TLSClientConfig:       tlsConfig,
		MaxIdleConns:          0, // no limit across hosts
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: 1 * time.Second,
		DisableCompression:    true,
	}
}

// copyBufferSize is the size of the buffers ReverseProxy copies bodies with.
const copyBufferSize = 32 << 10

// bufferPool is an httputil.BufferPool of copyBufferSize buffers. Buffers are
// pooled as array pointers, so that neither Get nor Put allocates.
type bufferPool struct{ p sync.Pool }

func newBufferPool() *bufferPool { return &bufferPool{} }

func (b *bufferPool) Get() []byte {
	if v, ok := b.p.Get().(*[copyBufferSize]byte); ok {
		return v[:]
	}
	return make([]byte, copyBufferSize)
}

func (b *bufferPool) Put(buf []byte) {
	if cap(buf) >= copyBufferSize {
		b.p.Put((*[copyBufferSize]byte)(buf[:copyBufferSize]))
	}
}

// lockedCapture keeps the first limit bytes of a request body and counts
// them all. The transport reads request bodies on its own goroutine, which
// can outlive the handler, so the captured bytes are guarded; the lock is
// never held while reading, so looking at the result cannot wait on a slow
// client.
type lockedCapture struct {
	rc    io.ReadCloser
	limit int64
	mu    sync.Mutex
	buf   []byte
	size  int64
}

func (l *lockedCapture) Read(p []byte) (int, error) {
	n, err := l.rc.Read(p)
	if n > 0 {
		l.mu.Lock()
		l.size += int64(n)
		if room := l.limit - int64(len(l.buf)); room > 0 {
			l.buf = append(l.buf, p[:min(int64(n), room)]...)
		}
		l.mu.Unlock()
	}
	return n, err
}

func (l *lockedCapture) Close() error { return l.rc.Close() }

// result returns the captured prefix and the number of bytes read so far.
// Later reads append past the returned slice's length, never into it.
func (l *lockedCapture) result() ([]byte, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf, l.size
}
