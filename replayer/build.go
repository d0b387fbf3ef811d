package replayer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/replaykit/replay/internal/redact"
)

// Build is a build of the app that replay starts, replays against and stops.
type Build struct {
	// Cmd is run through /bin/sh -c, in its own process group.
	Cmd string
	// Env holds extra KEY=VALUE entries on top of replay's own environment;
	// Wiring.Environ says what replay adds.
	Env []string
	// Dir is the working directory; empty means replay's.
	Dir string
	// LogPath receives the build's stdout and stderr; empty discards them
	// (the last lines are still kept for error messages).
	LogPath string
	// StartTimeout bounds the wait until the build answers HTTP; zero means
	// 60s.
	StartTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL; zero
	// means 5s.
	StopGrace time.Duration
	// Port is the port the build must listen on (its PORT); zero means a
	// free loopback port picked by StartBuild.
	Port int
}

// Process is a running build.
type Process struct {
	cmd    *exec.Cmd
	port   int
	build  Build
	tail   *tailBuffer
	log    *os.File
	exited chan struct{}
	err    error // Wait's error, valid once exited is closed
	stop   sync.Once
	stopEr error
}

// StartBuild picks a free loopback port, starts b with the environment
// Wiring.Environ gives (so start it after the proxies it points at listen),
// and waits until it answers HTTP on that port with any status. If the build
// exits first, or does not answer within b.StartTimeout, it is stopped and
// the error quotes the last line of its output.
func StartBuild(ctx context.Context, b Build, w Wiring) (*Process, error) {
	if strings.TrimSpace(b.Cmd) == "" {
		return nil, errors.New("start build: empty command")
	}
	if b.StartTimeout <= 0 {
		b.StartTimeout = 60 * time.Second
	}
	if b.StopGrace <= 0 {
		b.StopGrace = 5 * time.Second
	}
	port := b.Port
	if port == 0 {
		var err error
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("start build %q: %w", redact.Command(b.Cmd), err)
		}
	}
	p := &Process{port: port, build: b, tail: &tailBuffer{max: 8 << 10}, exited: make(chan struct{})}
	var out io.Writer = p.tail
	if b.LogPath != "" {
		f, err := os.Create(b.LogPath)
		if err != nil {
			return nil, fmt.Errorf("start build %q: log: %w", redact.Command(b.Cmd), err)
		}
		p.log = f
		out = io.MultiWriter(f, p.tail)
	}
	cmd := exec.Command("/bin/sh", "-c", b.Cmd)
	cmd.Env = w.Environ(os.Environ(), b.Env, port)
	cmd.Dir = b.Dir
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.closeLog()
		return nil, fmt.Errorf("start build %q: %w", redact.Command(b.Cmd), err)
	}
	p.cmd = cmd
	go func() {
		p.err = cmd.Wait()
		p.closeLog()
		close(p.exited)
	}()
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// waitReady polls the build's port with backoff until it answers HTTP.
func (p *Process) waitReady(ctx context.Context) error {
	err := poll(ctx, p.URL(), p.build.StartTimeout, p.exited)
	switch {
	case errors.Is(err, errExited):
		return fmt.Errorf("build %q %s before answering on port %d: %s", redact.Command(p.build.Cmd), exitText(p.err), p.port, p.lastLine())
	case errors.Is(err, errNoAnswer):
		return fmt.Errorf("build %q did not answer HTTP on port %d within %s (does it listen on $PORT?): %s",
			redact.Command(p.build.Cmd), p.port, p.build.StartTimeout, p.lastLine())
	case err != nil:
		return fmt.Errorf("start build %q: %w", redact.Command(p.build.Cmd), err)
	}
	return nil
}

// WaitReady waits until the target at url accepts TCP connections, polling
// with backoff, for at most timeout (zero: 60s). Use it for a target that the
// user starts after replay's proxies listen. It sends no HTTP request, so the
// target sees nothing but the replayed traffic.
func WaitReady(ctx context.Context, url string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	u, err := parseTarget(url)
	if err != nil {
		return err
	}
	addr := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	var d net.Dialer
	for {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		c, err := d.DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("wait for target %s: %w", url, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("target %s is not listening after %s: %w", url, timeout, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

var (
	errExited   = errors.New("exited")
	errNoAnswer = errors.New("no answer")
)

// poll requests url until any HTTP response comes, exited is closed, ctx is
// done or timeout has passed; the last error is wrapped in errNoAnswer.
func poll(ctx context.Context, url string, timeout time.Duration, exited <-chan struct{}) error {
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{
		Transport: tr,
		Timeout:   2 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	deadline := time.Now().Add(timeout)
	wait := 10 * time.Millisecond
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %w", errNoAnswer, err)
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// exitText describes how a process ended, as in "exited with status 1".
func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by " + signalText(ws.Signal())
		}
		code := ee.ExitCode()
		if code > 128 && code < 128+65 {
			// The shell's status for a command killed by signal code-128.
			return fmt.Sprintf("exited with status %d: killed by %s", code, signalText(syscall.Signal(code-128)))
		}
		return "exited with status " + strconv.Itoa(code)
	}
	if err != nil {
		return "failed: " + err.Error()
	}
	return "exited with status 0"
}

// signalText names a signal, e.g. "signal 9 (killed)".
func signalText(sig syscall.Signal) string {
	return fmt.Sprintf("signal %d (%s)", int(sig), sig)
}

// Port returns the port the build listens on.
func (p *Process) Port() int { return p.port }

// URL returns the build's base URL, "http://127.0.0.1:PORT".
func (p *Process) URL() string { return "http://127.0.0.1:" + strconv.Itoa(p.port) }

// Pid returns the process id of the shell running the command (also its
// process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the build's command has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Output returns the last lines of the build's output (up to 8 KiB).
func (p *Process) Output() string { return p.tail.String() }

// Stop sends SIGTERM to the build's process group, then SIGKILL after the
// grace period, and waits for the command to exit. It returns an error when
// the build had already exited on its own (it crashed during the run);
// calling it again returns the same.
func (p *Process) Stop() error {
	p.stop.Do(func() {
		pgid := p.cmd.Process.Pid
		select {
		case <-p.exited:
			p.stopEr = fmt.Errorf("build %q %s while replay was running: %s", redact.Command(p.build.Cmd), exitText(p.err), p.lastLine())
		default:
			_ = syscall.Kill(-pgid, syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(p.build.StopGrace):
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
				<-p.exited
			}
		}
		// Children that ignored the shell's end still share the group.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	})
	return p.stopEr
}

func (p *Process) closeLog() {
	if p.log != nil {
		p.log.Close()
	}
}

// lastLine returns the last non-empty line of the build's output.
func (p *Process) lastLine() string {
	lines := strings.Split(strings.TrimRight(p.tail.String(), "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(no output)"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// freePort returns a loopback TCP port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
