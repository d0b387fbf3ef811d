package catalog

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server is the catalog API running over TLS.
type Server struct {
	srv       *http.Server
	ln        net.Listener
	done      chan struct{}
	err       error
	closeOnce sync.Once
}

// Start serves Handler over TLS with cert on addr ("" means 127.0.0.1:0, a
// free loopback port) until ctx is done or Close is called. It returns once
// the listener is open, so the address can be used at once.
func Start(ctx context.Context, cert tls.Certificate, addr string) (*Server, error) {
	if len(cert.Certificate) == 0 {
		return nil, errors.New("start catalog: no certificate given")
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("start catalog: %w", err)
	}
	s := &Server{
		srv: &http.Server{
			Handler:           Handler(),
			TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
			ReadHeaderTimeout: 10 * time.Second,
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		err := s.srv.ServeTLS(ln, "", "")
		if !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
		close(s.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return s, nil
}

// Addr returns the host:port the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns https://host:port of the server (by IP address; a caller that
// needs a hostname, e.g. to go through a proxy, builds its own).
func (s *Server) URL() string { return "https://" + s.Addr() }

// Close stops the server at once and waits until it has stopped. It is safe
// to call more than once and returns the serving error, if any.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { s.srv.Close() })
	<-s.done
	return s.err
}

// Done is closed when the server has stopped.
func (s *Server) Done() <-chan struct{} { return s.done }
