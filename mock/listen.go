package mock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Serve is one plain HTTP listener that answers as one recorded service,
// for an app that takes an upstream base URL instead of a proxy.
type Serve struct {
	// Listen is the address to listen on, e.g. "127.0.0.1:9001".
	Listen string
	// Service is the recorded service, "host:port".
	Service string
}

// ListenError is a listener that could not be opened.
type ListenError struct {
	// Serve is the listener's Serve; the zero Serve is the forward proxy.
	Serve Serve
	// Addr is the address it was to listen on.
	Addr string
	Err  error
}

func (e *ListenError) Error() string { return fmt.Sprintf("listen on %s: %v", e.Addr, e.Err) }

func (e *ListenError) Unwrap() error { return e.Err }

// Listening is a Server serving on its listeners (Server.Listen).
type Listening struct {
	server *Server
	// Proxy is the forward proxy's listener; nil when none was asked for.
	Proxy net.Listener
	// Serve are the Serve listeners, in the order given.
	Serve []net.Listener
	srvs  []*http.Server
	wg    sync.WaitGroup
	errc  chan error
}

// Listen serves s as a forward proxy on proxy (none when empty) and as
// each recorded service of serve on its own listener. A service not
// recorded is ErrUnknownService; an address that cannot be listened on, a
// *ListenError. On error nothing is left listening.
func (s *Server) Listen(proxy string, serve []Serve) (*Listening, error) {
	l := &Listening{server: s, errc: make(chan error, 1+len(serve))}
	var handlers []http.Handler
	var specs []Serve
	var addrs []string
	if proxy != "" {
		handlers, specs, addrs = append(handlers, s), append(specs, Serve{}), append(addrs, proxy)
	}
	for _, sp := range serve {
		h, err := s.ServiceHandler(sp.Service)
		if err != nil {
			return nil, err
		}
		handlers, specs, addrs = append(handlers, h), append(specs, sp), append(addrs, sp.Listen)
	}
	listeners, err := s.listen(specs, addrs)
	if err != nil {
		return nil, err
	}
	for i, nl := range listeners {
		hs := s.cfg.Limits.Server(handlers[i], slog.New(slog.DiscardHandler))
		// HTTP/1.1 and h2c with prior knowledge (gRPC clients given the
		// listener as their target), told apart by the HTTP/2 preface.
		hs.Protocols = new(http.Protocols)
		hs.Protocols.SetHTTP1(true)
		hs.Protocols.SetUnencryptedHTTP2(true)
		l.srvs = append(l.srvs, hs)
		l.wg.Go(func() {
			if err := hs.Serve(nl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				l.errc <- fmt.Errorf("serve %s: %w", nl.Addr(), err)
			}
		})
	}
	if proxy != "" {
		l.Proxy, listeners = listeners[0], listeners[1:]
	}
	l.Serve = listeners
	return l, nil
}

// listen opens a listener per address (loopback when it names no host),
// warning of those reachable from the network; on error it closes them.
func (s *Server) listen(specs []Serve, addrs []string) ([]net.Listener, error) {
	var listeners []net.Listener
	for i, addr := range addrs {
		what, reach := "mock's forward proxy", "it forwards requests for hosts it does not mock to any host"
		if specs[i] != (Serve{}) {
			what, reach = "mock of "+specs[i].Service, "it answers from the snapshot"
		}
		nl, err := s.cfg.Limits.Listen(addr, what, reach, s.log, s.cfg.Warn)
		if err != nil {
			for _, nl := range listeners {
				nl.Close()
			}
			return nil, &ListenError{Serve: specs[i], Addr: addr, Err: err}
		}
		listeners = append(listeners, nl)
	}
	return listeners, nil
}

// Err delivers an unexpected end of a listener.
func (l *Listening) Err() <-chan error { return l.errc }

// Stop stops the listeners, lets answers in progress finish (for at most
// five seconds), ends the tunnels still open and closes the Server.
func (l *Listening) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for _, hs := range l.srvs {
		wg.Go(func() {
			if err := hs.Shutdown(ctx); err != nil {
				hs.Close()
			}
		})
	}
	wg.Wait()
	l.server.Close()
	l.wg.Wait()
}

// Server is the Server served.
func (l *Listening) Server() *Server { return l.server }
