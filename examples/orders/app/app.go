package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Config configures the service. Exactly one of DB and DatabaseURL is needed.
type Config struct {
	// DB is a pool the caller owns (New does not close it). It takes
	// precedence over DatabaseURL.
	DB *pgxpool.Pool
	// DatabaseURL is a PostgreSQL connection string; New opens a pool with
	// pgx's default settings (statement cache mode) and Close closes it.
	DatabaseURL string
	// Slow turns GET /orders into an N+1 (one query per listed order).
	Slow bool
	// CatalogURL is the base URL of the catalog API; GET /catalog fetches
	// CatalogURL + "/products". Empty makes GET /catalog answer 502.
	CatalogURL string
	// UpstreamN1 makes GET /catalog call the catalog API once more per
	// product, for its details (an HTTP N+1); its answer is unchanged.
	UpstreamN1 bool
	// HTTPClient makes the calls to the catalog API. Nil means a client with
	// Go's default transport behaviour (HTTPS_PROXY/HTTP_PROXY from the
	// environment, system roots or SSL_CERT_FILE) and a 10s timeout.
	HTTPClient *http.Client
	// SQLComment appends a sqlcommenter comment carrying the request's
	// traceparent to every query the handlers run (not to BEGIN/COMMIT),
	// so a wire proxy can attribute statements under concurrency. Such
	// queries use pgx's exec mode (unnamed statements), since their text
	// changes with every request. False runs the queries unchanged.
	SQLComment bool
	// Delay adds a fixed wait before the handler of a route runs, keyed by
	// its pattern (one of Routes, e.g. "GET /orders/{id}/status"): a
	// slowdown that is not in the database, to test that a comparison
	// finds it. Nil adds none.
	Delay map[string]time.Duration
	// Burn adds a busy loop of that much CPU time before the handler of a
	// route runs, keyed as Delay is: a build that spends more CPU per
	// request and nothing else, to test that a comparison finds it. Nil
	// adds none.
	Burn map[string]time.Duration
	// Change, when set, changes the service's answers (one of Changes,
	// e.g. ChangeType): another behaviour, for testing that a comparison of
	// responses names it. Empty answers as documented.
	Change string
	// Logger receives server-side errors; nil discards them.
	Logger *slog.Logger
}

// App is the orders service. It is an http.Handler.
type App struct {
	db         *pgxpool.Pool
	ownDB      bool
	slow       bool
	catalog    string
	upstreamN1 bool
	client     *http.Client
	sqlComment bool
	log        *slog.Logger
	mux        *http.ServeMux
	handler    http.Handler // mux, its answers changed by Config.Change
}

// ListLimit is the number of orders GET /orders returns at most.
const ListLimit = 50

// New connects to the database (when given a URL), creates the schema
// (Migrate) and returns the service.
func New(ctx context.Context, cfg Config) (*App, error) {
	a := &App{
		db:         cfg.DB,
		slow:       cfg.Slow,
		catalog:    cfg.CatalogURL,
		upstreamN1: cfg.UpstreamN1,
		client:     cfg.HTTPClient,
		sqlComment: cfg.SQLComment,
		log:        cfg.Logger,
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.client == nil {
		a.client = &http.Client{Timeout: 10 * time.Second, Transport: newTransport(http.ProxyFromEnvironment)}
	}
	if _, err := ParseChange(cfg.Change); err != nil {
		return nil, err
	}
	for route := range cfg.Delay {
		if !knownRoute(route) {
			return nil, fmt.Errorf("delay: unknown route %q (want one of %s)", route, strings.Join(Routes(), ", "))
		}
	}
	for route := range cfg.Burn {
		if !knownRoute(route) {
			return nil, fmt.Errorf("burn: unknown route %q (want one of %s)", route, strings.Join(Routes(), ", "))
		}
	}
	if a.db == nil {
		if cfg.DatabaseURL == "" {
			return nil, errors.New("no database: set Config.DB or Config.DatabaseURL")
		}
		db, err := connect(ctx, cfg.DatabaseURL)
		if err != nil {
			return nil, err
		}
		a.db, a.ownDB = db, true
	}
	if err := Migrate(ctx, a.db); err != nil {
		a.Close()
		return nil, err
	}
	a.mux = http.NewServeMux()
	handle := func(route string, h http.HandlerFunc) {
		if d := cfg.Burn[route]; d > 0 {
			h = burning(d, h)
		}
		if d := cfg.Delay[route]; d > 0 {
			h = delayed(d, h)
		}
		a.mux.HandleFunc(route, h)
	}
	handle(RouteCreateOrder, a.createOrder)
	handle(RouteListOrders, a.listOrders)
	handle(RouteGetOrder, a.getOrder)
	handle(RouteGetStatus, a.getStatus)
	handle(RouteCatalog, a.getCatalog)
	a.handler = a.mux
	if cfg.Change != "" {
		a.handler = changed(cfg.Change, a.mux)
	}
	return a, nil
}

// connect opens a pool with pgx's defaults and checks that the server
// answers, so a wrong or unreachable DATABASE_URL fails at start.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := db.Ping(pingCtx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return db, nil
}

// ServeHTTP serves the endpoints listed in the package documentation.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.handler.ServeHTTP(w, withTraceparent(r))
}

// DB returns the pool the service uses.
func (a *App) DB() *pgxpool.Pool { return a.db }

// Close closes the database pool if New opened it.
func (a *App) Close() {
	if a.ownDB && a.db != nil {
		a.db.Close()
	}
}

// newTransport is Go's default transport with the given proxy function and
// an idle pool large enough for a load test.
func newTransport(proxy func(*http.Request) (*url.URL, error)) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = proxy
	t.MaxIdleConnsPerHost = 64
	return t
}
