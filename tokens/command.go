package tokens

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Command fetches tokens by running a shell command: its standard output,
// trimmed, is the token.
type Command struct {
	// Cmd runs under sh -c, with replay's environment.
	Cmd string
	// TTL is how long a token that is not a JWT lives; zero: until the
	// target refuses it (a JWT's exp claim always wins).
	TTL time.Duration
	// Dir is the command's working directory; empty: replay's.
	Dir string
}

// Fetch runs the command once.
func (c Command) Fetch(ctx context.Context) (string, time.Time, error) {
	cmd := exec.CommandContext(ctx, "sh", "-c", c.Cmd)
	cmd.Dir = c.Dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	if err := cmd.Run(); err != nil {
		return "", time.Time{}, fmt.Errorf("token command: %w%s", err, lastLine(stderr.String()))
	}
	tok := strings.TrimSpace(stdout.String())
	if tok == "" {
		return "", time.Time{}, fmt.Errorf("token command: printed no token%s", lastLine(stderr.String()))
	}
	if strings.ContainsAny(tok, "\r\n") {
		return "", time.Time{}, fmt.Errorf("token command: printed more than one line; want the token alone")
	}
	if exp, ok := JWTExpiry(tok); ok {
		return tok, exp, nil
	}
	if c.TTL > 0 {
		return tok, started.Add(c.TTL), nil
	}
	return tok, time.Time{}, nil
}

// lastLine is ": " and the last line of a command's standard error, cut to
// 200 bytes; empty when it wrote none.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}
