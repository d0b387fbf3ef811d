package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/replaykit/replay/internal/redact"
)

// ResetError is a reset command that failed.
type ResetError struct {
	// Side is the side whose phase it was to precede; empty before an
	// interleaved load, which both sides share.
	Side string
	// Phase is replayer.ResetExplain or replayer.ResetLoad.
	Phase string
	// Command is the command as given; Error masks its secrets.
	Command string
	// Status says how it ended, e.g. "exited with status 1".
	Status string
	// LastLine is the last line of its output, or "(no output)".
	LastLine string
	// Err is what could not be done (a log that cannot be opened, ctx
	// canceled); nil when the command ran and failed.
	Err error
}

func (e *ResetError) Error() string {
	what := fmt.Sprintf("reset before the %s %s phase", e.Side, e.Phase)
	if e.Side == "" {
		what = "reset before the interleaved load"
	}
	if e.Err != nil {
		return what + ": " + e.Err.Error()
	}
	return fmt.Sprintf("%s: %q %s: %s", what, redact.Command(e.Command), e.Status, e.LastLine)
}

func (e *ResetError) Unwrap() error { return e.Err }

// ResetCommand returns a replayer.ComparePlan.Reset that runs command with
// /bin/sh -c, replay's environment plus REPLAY_SIDE (the side, or "both"
// before an interleaved load) and REPLAY_PHASE, its output appended to
// logPath. A failure is a *ResetError.
func ResetCommand(command, logPath string) func(ctx context.Context, side, phase string) error {
	return func(ctx context.Context, side, phase string) error {
		fail := &ResetError{Side: side, Phase: phase, Command: command}
		env := side
		if env == "" {
			env = "both"
		}
		log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			fail.Err = err
			return fail
		}
		defer log.Close()
		fmt.Fprintf(log, "# %s: REPLAY_SIDE=%s REPLAY_PHASE=%s\n", time.Now().Format(time.RFC3339), env, phase)
		var tail strings.Builder
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Env = append(os.Environ(), "REPLAY_SIDE="+env, "REPLAY_PHASE="+phase)
		// One writer for both: exec.Cmd then never calls it from two
		// goroutines at once.
		out := io.MultiWriter(log, &tail)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				fail.Err = ctx.Err()
				return fail
			}
			fail.Status = err.Error()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() >= 0 {
				fail.Status = "exited with status " + strconv.Itoa(ee.ExitCode())
			}
			fail.LastLine = lastLine(tail.String())
			return fail
		}
		return nil
	}
}

// lastLine returns the last non-empty line of out, or "(no output)".
func lastLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(no output)"
}
