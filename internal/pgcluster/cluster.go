package pgcluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Config says how to start a cluster. Its zero value is useful.
type Config struct {
	// Settings are extra server settings passed as -c name=value,
	// e.g. "shared_preload_libraries": "pg_stat_statements".
	Settings map[string]string
	// StartTimeout bounds initdb plus server start; zero means 60s.
	StartTimeout time.Duration
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// TLS, when set, turns TLS on in the server with this certificate (its
	// chain) and key.
	TLS *tls.Certificate
	// RequireTLS admits TCP clients over TLS only (hostssl in
	// pg_hba.conf); it needs TLS.
	RequireTLS bool
}

// Cluster is a running throwaway PostgreSQL server.
type Cluster struct {
	// Host is the address the server listens on (127.0.0.1).
	Host string
	// Port is the TCP port the server listens on.
	Port int
	// Dir holds the data directory, socket and log; removed by Stop.
	Dir string
	// User is the superuser name that trust authentication accepts.
	User string

	cmd      *exec.Cmd
	done     chan struct{}
	external bool
	stopOnce sync.Once
	stopErr  error
	log      *slog.Logger
}

// Start initialises and starts a new cluster.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, owner, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "replay-pg-")
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	c := &Cluster{Host: "127.0.0.1", Dir: dir, User: owner.Username, log: log, done: make(chan struct{})}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start postgres: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"-D", data, "-U", c.User, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, lastLine(out))
	}

	settings := cfg.Settings
	if cfg.TLS != nil {
		if err := setUpTLS(data, cred, cfg); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start postgres: %w", err)
		}
		settings = map[string]string{"ssl": "on"}
		for k, v := range cfg.Settings {
			settings[k] = v
		}
	} else if cfg.RequireTLS {
		os.RemoveAll(dir)
		return nil, errors.New("start postgres: RequireTLS needs TLS")
	}

	// The port is picked by the OS and then handed to postgres; another
	// process may take it in between, so a failed start is retried.
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		if err := c.startServer(ctx, bin, data, port, cred, settings); err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			continue
		}
		log.Info("postgres started", "dir", dir, "port", port)
		return c, nil
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start postgres: %w", lastErr)
}

// URL returns a connection URL for the named database.
func (c *Cluster) URL(database string) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", c.User, c.Host, c.Port, database)
}

// Addr returns host:port of the server.
func (c *Cluster) Addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// Stop stops the server (fast shutdown, then kill) and removes its directory.
// It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		if c.external {
			return
		}
		if c.cmd != nil && c.cmd.Process != nil {
			// SIGINT is PostgreSQL's "fast" shutdown.
			c.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-c.done:
			case <-time.After(10 * time.Second):
				syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
				<-c.done
			}
		}
		c.stopErr = os.RemoveAll(c.Dir)
	})
	return c.stopErr
}

// StopImmediately takes the server down at once, as a crash would:
// PostgreSQL's "immediate" shutdown (SIGQUIT), which cuts every client's
// connection without a checkpoint. It waits for the server to exit and
// leaves its directory to Stop. A server someone else runs (FromURL) is
// left alone, with an error.
func (c *Cluster) StopImmediately() error {
	if c.external || c.cmd == nil || c.cmd.Process == nil {
		return errors.New("postgres: not a server this process started")
	}
	if err := c.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return fmt.Errorf("postgres: immediate shutdown: %w", err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(10 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
		return errors.New("postgres: immediate shutdown took over 10s; killed")
	}
}

// FromURL returns a Cluster for a server that someone else runs, named by a
// postgres:// URL (the port defaults to 5432). Its Stop leaves the server
// alone.
func FromURL(raw string) (*Cluster, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	host, portStr, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, portStr = u.Host, "5432"
	}
	port, _ := strconv.Atoi(portStr)
	return &Cluster{Host: host, Port: port, User: u.User.Username(), external: true, done: make(chan struct{})}, nil
}
