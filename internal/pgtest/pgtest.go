// Package pgtest starts throwaway PostgreSQL clusters from the installed
// binaries, for tests and for the demo.
//
// A cluster lives in a fresh temporary directory, listens on 127.0.0.1 on a
// free port, trusts every local connection and runs with fsync off. When the
// process runs as root, the server runs as the "postgres" user, since
// PostgreSQL refuses to run as root. Stop removes everything it created.
//
// It does not manage long-lived servers, and it never installs PostgreSQL:
// .ci/run makes sure the binaries are there.
package pgtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvURL names the environment variable whose value, when set, is used as the
// database instead of starting a cluster.
const EnvURL = "REPLAY_TEST_DATABASE_URL"

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

// BinDir returns the directory that holds the PostgreSQL server binaries:
// the one holding initdb on PATH, else the newest /usr/lib/postgresql/*/bin.
func BinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("postgresql server binaries not found: install PostgreSQL (Debian: apt-get install postgresql) or put initdb on PATH")
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
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

// setUpTLS writes the server's certificate and key into the data directory
// (owned by the server's user, the key private to it, as postgres demands)
// and, with RequireTLS, a pg_hba.conf that admits TCP clients over TLS only.
func setUpTLS(data string, cred *syscall.Credential, cfg Config) error {
	var certPEM []byte
	for _, der := range cfg.TLS.Certificate {
		certPEM = append(certPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	key, err := x509.MarshalPKCS8PrivateKey(cfg.TLS.PrivateKey)
	if err != nil {
		return fmt.Errorf("server key: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{{"server.crt", certPEM}, {"server.key", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})}}
	if cfg.RequireTLS {
		files = append(files, struct {
			name string
			data []byte
		}{"pg_hba.conf", []byte("local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n")})
	}
	for _, f := range files {
		path := filepath.Join(data, f.name)
		if err := os.WriteFile(path, f.data, 0o600); err != nil {
			return err
		}
		if cred != nil {
			if err := os.Chown(path, int(cred.Uid), int(cred.Gid)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) startServer(ctx context.Context, bin, data string, port int, cred *syscall.Credential, settings map[string]string) error {
	args := []string{"-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + c.Dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=64MB",
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "-c", k+"="+settings[k])
	}
	logPath := filepath.Join(c.Dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return err
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		logFile.Close()
		close(done)
	}()
	addr := net.JoinHostPort(c.Host, strconv.Itoa(port))
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(logPath)
			return fmt.Errorf("postgres exited: %v: %s", waitErr, lastLine(log))
		case <-ctx.Done():
			cmd.Process.Kill()
			<-done
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if ready(addr) {
			c.Port = port
			c.cmd = cmd
			c.done = done
			return nil
		}
	}
}

// ready reports whether the server at addr answers a startup with
// something other than "the database system is starting up".
func ready(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Second))
	// StartupMessage for user "postgres"-less probing: protocol 3.0, user=x.
	params := []byte("user\x00pgtest_probe\x00database\x00postgres\x00\x00")
	msg := make([]byte, 8, 8+len(params))
	msg = append(msg, params...)
	putUint32(msg[0:], uint32(len(msg)))
	putUint32(msg[4:], 196608)
	if _, err := conn.Write(msg); err != nil {
		return false
	}
	buf := make([]byte, 512)
	n, err := conn.Read(buf)
	if err != nil || n == 0 {
		return false
	}
	// 'R' (authentication) means the server accepts connections; an 'E'
	// with SQLSTATE 57P03 means it is still starting.
	if buf[0] == 'E' && bytes.Contains(buf[:n], []byte("57P03")) {
		return false
	}
	return true
}

func putUint32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
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

// serverUser returns the credential to run the server with: nil when we are
// not root, the postgres user's when we are.
func serverUser() (*syscall.Credential, *user.User, error) {
	if os.Geteuid() != 0 {
		u, err := user.Current()
		if err != nil {
			return nil, nil, fmt.Errorf("start postgres: %w", err)
		}
		return nil, u, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, nil, errors.New("start postgres: running as root needs a \"postgres\" user to run the server (install Debian's postgresql package)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, u, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
