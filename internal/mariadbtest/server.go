package mariadbtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// User and Password are the account a Server makes for its clients, with
// every privilege, from any host, by mysql_native_password.
const (
	User     = "replay"
	Password = "replay-test"
)

// Config says how to start a server. Its zero value is useful.
type Config struct {
	// Args are extra mariadbd options, e.g. "--max-connections=20".
	Args []string
	// StartTimeout bounds installing and starting; zero means 60s.
	StartTimeout time.Duration
	// GeneralLog turns the general log on, into the table mysql.general_log
	// (GeneralLog reads it).
	GeneralLog bool
	// TLS, when set, turns TLS on in the server with this certificate (its
	// chain) and key; RequireTLS then refuses TCP clients without it.
	TLS        *tls.Certificate
	RequireTLS bool
}

// Server is a running throwaway MariaDB server.
type Server struct {
	// Host is the address the server listens on (127.0.0.1), Port its TCP
	// port.
	Host string
	Port int
	// Dir holds the data directory, socket and logs; removed by Stop.
	Dir string

	cmd      *exec.Cmd
	done     chan struct{}
	stopOnce sync.Once
	stopErr  error
}

// Start installs a new data directory in a temporary directory and starts
// mariadbd on a free loopback port. As root it runs the server as the
// mysql user, which Debian's mariadb-server creates.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	bin, install, err := binaries()
	if err != nil {
		return nil, err
	}
	cred, err := serverUser()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "replay-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("start mariadb: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("start mariadb: %w", err)
		}
	}
	s := &Server{Host: "127.0.0.1", Dir: dir, done: make(chan struct{})}
	args := []string{"--no-defaults", "--datadir=" + s.data(), "--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"}
	if cred != nil {
		args = append(args, "--user=mysql")
	}
	ins := exec.CommandContext(ctx, install, args...)
	ins.Dir = dir
	if out, err := ins.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("mariadb-install-db: %w: %s", err, lastLine(out))
	}
	// The port is picked by the OS and then handed to the server; another
	// process may take it in between, so a failed start is retried.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			lastErr = err
			continue
		}
		if lastErr = s.start(ctx, bin, port, cred, cfg); lastErr == nil {
			if lastErr = s.setUp(ctx, cfg); lastErr == nil {
				return s, nil
			}
			s.Stop()
			return nil, fmt.Errorf("start mariadb: %w", lastErr)
		}
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start mariadb: %w", lastErr)
}

func (s *Server) data() string   { return filepath.Join(s.Dir, "data") }
func (s *Server) socket() string { return filepath.Join(s.Dir, "mariadb.sock") }

// start runs mariadbd on port and waits until it accepts connections.
func (s *Server) start(ctx context.Context, bin string, port int, cred *syscall.Credential, cfg Config) error {
	args := []string{"--no-defaults", "--datadir=" + s.data(), "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--socket=" + s.socket(), "--skip-name-resolve",
		"--pid-file=" + filepath.Join(s.Dir, "mariadb.pid"), "--log-error=" + filepath.Join(s.Dir, "error.log"),
		"--innodb-buffer-pool-size=64M", "--innodb-flush-log-at-trx-commit=0", "--innodb-log-file-size=16M",
		"--skip-log-bin", "--performance-schema=OFF", "--max-connections=500"}
	if cfg.GeneralLog {
		args = append(args, "--general-log=1", "--log-output=TABLE")
	}
	if cred != nil {
		args = append(args, "--user=mysql")
	}
	if cfg.TLS != nil {
		ta, err := s.tlsArgs(cred, cfg)
		if err != nil {
			return err
		}
		args = append(args, ta...)
	}
	args = append(args, cfg.Args...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("mariadbd: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	addr := net.JoinHostPort(s.Host, strconv.Itoa(port))
	for {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "error.log"))
			return fmt.Errorf("mariadbd exited: %s", lastLine(append(out.Bytes(), log...)))
		case <-ctx.Done():
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
			return fmt.Errorf("mariadbd did not start: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		if greets(addr) {
			s.Port, s.cmd, s.done = port, cmd, done
			return nil
		}
	}
}

// greets reports whether a MySQL server answers on addr with a greeting.
func greets(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	var hdr [5]byte
	n, _ := c.Read(hdr[:])
	return n == 5 && hdr[4] == 10
}

// Addr returns host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)) }

// DSN returns a go-sql-driver/mysql DSN for database db at addr (the
// server's, or a proxy's in front of it), with extra parameters.
func (s *Server) DSN(addr, db string, params ...string) string {
	q := strings.Join(params, "&")
	if q != "" {
		q = "?" + q
	}
	return fmt.Sprintf("%s:%s@tcp(%s)/%s%s", User, Password, addr, db, q)
}

// Stop stops the server (SIGTERM, then kill) and removes its directory.
// It is safe to call more than once.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.done:
			case <-time.After(15 * time.Second):
				syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
				<-s.done
			}
		}
		s.stopErr = os.RemoveAll(s.Dir)
	})
	return s.stopErr
}

// binaries returns the paths of mariadbd and mariadb-install-db.
func binaries() (server, install string, err error) {
	find := func(names ...string) string {
		for _, n := range names {
			if p, err := exec.LookPath(n); err == nil {
				return p
			}
			for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/mysql/bin"} {
				if _, err := os.Stat(filepath.Join(d, n)); err == nil {
					return filepath.Join(d, n)
				}
			}
		}
		return ""
	}
	server = find("mariadbd", "mysqld")
	install = find("mariadb-install-db", "mysql_install_db")
	if server == "" || install == "" {
		return "", "", errors.New("start mariadb: mariadbd or mariadb-install-db not found (install Debian's mariadb-server)")
	}
	return server, install, nil
}

// serverUser returns the credential to run the server with: the mysql
// user's when running as root, else none (the current user's).
func serverUser() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("mysql")
	if err != nil {
		return nil, errors.New("start mariadb: running as root needs a \"mysql\" user to run the server (install Debian's mariadb-server)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
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
