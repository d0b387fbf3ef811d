// Command catalog runs the stand-in catalog API of the demo workload on its
// own, for trying the orders service by hand (`replay demo` starts it
// in-process instead). See examples/orders/README.md.
//
// Environment: ADDR (default 127.0.0.1:8443); TLS_CERT and TLS_KEY, PEM
// files of the server certificate and its key (both, or neither for plain
// HTTP). It stops on SIGINT/SIGTERM.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/replaykit/replay/examples/orders/catalog"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		fmt.Fprintf(os.Stderr, "catalog: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, env func(string) string) error {
	addr := env("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8443"
	}
	certFile, keyFile := env("TLS_CERT"), env("TLS_KEY")
	if (certFile == "") != (keyFile == "") {
		return errors.New("set both TLS_CERT and TLS_KEY, or neither for plain HTTP")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("load TLS_CERT/TLS_KEY: %w", err)
		}
		srv, err := catalog.Start(ctx, cert, addr)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "catalog listening on %s\n", srv.URL())
		<-srv.Done()
		return srv.Close()
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: catalog.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "catalog listening on http://%s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
