package main

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
)

// compareResetFunc runs the --reset command: /bin/sh -c with REPLAY_SIDE and
// REPLAY_PHASE, output appended to logPath.
func compareResetFunc(command, logPath string) func(ctx context.Context, side, phase string) error {
	return func(ctx context.Context, side, phase string) error {
		if side == "" {
			side = "both"
		}
		what := fmt.Sprintf("--reset before the %s %s phase", side, phase)
		if side == "both" {
			what = "--reset before the interleaved load"
		}
		log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("compare: %s: %w", what, err)
		}
		defer log.Close()
		fmt.Fprintf(log, "# %s: REPLAY_SIDE=%s REPLAY_PHASE=%s\n", time.Now().Format(time.RFC3339), side, phase)
		var tail strings.Builder
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
		cmd.Env = append(os.Environ(), "REPLAY_SIDE="+side, "REPLAY_PHASE="+phase)
		// One writer for both: exec.Cmd then never calls it from two
		// goroutines at once.
		out := io.MultiWriter(log, &tail)
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Run(); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("compare: %s: %w", what, ctx.Err())
			}
			status := err.Error()
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.ExitCode() >= 0 {
				status = "exited with status " + strconv.Itoa(ee.ExitCode())
			}
			return fmt.Errorf("compare: %s: %q %s: %s", what, command, status, lastLine(tail.String()))
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
