package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"golang.org/x/net/http/httpproxy"
)

// Settings are what Serve reads from the environment.
type Settings struct {
	// Addr is HOST:PORT to listen on (HOST defaults to 127.0.0.1, PORT to 8080).
	Addr string
	// DatabaseURL is DATABASE_URL (required).
	DatabaseURL string
	// Slow is APP_SLOW (1/true: N+1 in GET /orders; empty or 0: one query).
	Slow bool
	// CatalogURL is CATALOG_URL (may be empty: GET /catalog then answers 502).
	CatalogURL string
	// UpstreamN1 is APP_UPSTREAM_N1 (1/true: GET /catalog calls the catalog
	// API once per product too, an HTTP N+1).
	UpstreamN1 bool
	// SQLComment is APP_SQLCOMMENT (1/true: tag queries with the traceparent).
	SQLComment bool
	// Delay is APP_DELAY (see ParseDelay): a fixed wait added to routes,
	// e.g. "GET /orders/{id}/status=50ms"; nil when unset.
	Delay map[string]time.Duration
	// Burn is APP_BURN (see ParseBurn): CPU time spent in a busy loop
	// before routes run, e.g. "GET /orders/{id}=40us"; nil when unset.
	Burn map[string]time.Duration
	// Change is APP_CHANGE (see ParseChange): answers changed on purpose,
	// e.g. "type"; empty when unset.
	Change string
}

// ParseEnv reads the service's settings through env (e.g. os.Getenv). Its
// errors name the variable at fault.
func ParseEnv(env func(string) string) (Settings, error) {
	var s Settings
	s.DatabaseURL = env("DATABASE_URL")
	if s.DatabaseURL == "" {
		return s, errors.New("DATABASE_URL is not set: give the PostgreSQL URL, e.g. postgres://user@127.0.0.1:5432/orders")
	}
	port := env("PORT")
	if port == "" {
		port = "8080"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return s, fmt.Errorf("PORT must be a port number, got %q", port)
	}
	host := env("HOST")
	if host == "" {
		host = "127.0.0.1"
	}
	s.Addr = net.JoinHostPort(host, port)
	var err error
	if s.Slow, err = envBool(env, "APP_SLOW"); err != nil {
		return s, err
	}
	if s.UpstreamN1, err = envBool(env, "APP_UPSTREAM_N1"); err != nil {
		return s, err
	}
	if s.SQLComment, err = envBool(env, "APP_SQLCOMMENT"); err != nil {
		return s, err
	}
	if s.Delay, err = ParseDelay(env("APP_DELAY")); err != nil {
		return s, fmt.Errorf("APP_DELAY %w", err)
	}
	if s.Burn, err = ParseBurn(env("APP_BURN")); err != nil {
		return s, fmt.Errorf("APP_BURN %w", err)
	}
	if s.Change, err = ParseChange(env("APP_CHANGE")); err != nil {
		return s, err
	}
	s.CatalogURL = env("CATALOG_URL")
	if s.CatalogURL != "" {
		u, err := url.Parse(s.CatalogURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return s, fmt.Errorf("CATALOG_URL must be an http(s) URL with a host, got %q", s.CatalogURL)
		}
	}
	return s, nil
}

func envBool(env func(string) string, name string) (bool, error) {
	v := env(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be 0 or 1, got %q", name, v)
	}
	return b, nil
}

// Serve runs the service as a program does, configured through env (see
// ParseEnv; e.g. os.Getenv), until ctx is done; then it shuts down
// gracefully (in-flight requests get 10s) and returns nil. It logs one line
// once it listens; logger nil discards it. The database is reachable and
// the schema exists by the time the port accepts connections.
//
// The outbound client reads HTTPS_PROXY, HTTP_PROXY, NO_PROXY (upper or
// lower case) and SSL_CERT_FILE through env too, with Go's semantics.
func Serve(ctx context.Context, env func(string) string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := ParseEnv(env)
	if err != nil {
		return err
	}
	client, err := envClient(env)
	if err != nil {
		return err
	}
	a, err := New(ctx, Config{
		DatabaseURL: s.DatabaseURL,
		Slow:        s.Slow,
		CatalogURL:  s.CatalogURL,
		UpstreamN1:  s.UpstreamN1,
		HTTPClient:  client,
		SQLComment:  s.SQLComment,
		Delay:       s.Delay,
		Burn:        s.Burn,
		Change:      s.Change,
		Logger:      logger,
	})
	if err != nil {
		return err
	}
	defer a.Close()

	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           a,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	attrs := []any{"url", "http://" + ln.Addr().String(), "slow", s.Slow, "catalog", s.CatalogURL, "upstream_n1", s.UpstreamN1}
	if len(s.Delay) > 0 {
		attrs = append(attrs, "delay", env("APP_DELAY"))
	}
	if len(s.Burn) > 0 {
		attrs = append(attrs, "burn", env("APP_BURN"))
	}
	if s.Change != "" {
		attrs = append(attrs, "change", s.Change)
	}
	logger.Info("orders listening", attrs...)

	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// envClient is Go's default client behaviour with the proxy and CA settings
// read through env rather than from the process (they are the same when env
// is os.Getenv; net/http reads the process environment only once).
func envClient(env func(string) string) (*http.Client, error) {
	first := func(names ...string) string {
		for _, n := range names {
			if v := env(n); v != "" {
				return v
			}
		}
		return ""
	}
	proxy := (&httpproxy.Config{
		HTTPProxy:  first("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: first("HTTPS_PROXY", "https_proxy"),
		NoProxy:    first("NO_PROXY", "no_proxy"),
		CGI:        env("REQUEST_METHOD") != "",
	}).ProxyFunc()
	t := newTransport(func(r *http.Request) (*url.URL, error) { return proxy(r.URL) })

	// crypto/x509 already honours the process's SSL_CERT_FILE; load the file
	// only when env names another one (it replaces the system roots, as
	// SSL_CERT_FILE does).
	if f := env("SSL_CERT_FILE"); f != "" && f != os.Getenv("SSL_CERT_FILE") {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("SSL_CERT_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("SSL_CERT_FILE %s: no PEM certificates in it", f)
		}
		t.TLSClientConfig = &tls.Config{RootCAs: pool}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: t}, nil
}
