package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startServer runs postgres on port and waits until it accepts connections;
// on success it records the port and the process in c.
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
