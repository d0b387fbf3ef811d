package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaykit/replay/report"
)

// exitRegression is replay's exit status for a regression or missed goals:
// a result, not a failure.
const exitRegression = 99

// replay runs the replay binary with args for the tool call req and waits
// for it, returning its stdout. Exit 0 and 99 are results, and so is exit 1
// with a report that says why it could not decide; any other end is an
// error whose text
// is the child's last line (replay prints its error in one line). Its
// progress lines become notifications when req carries a progress token.
func (s *Server) replay(ctx context.Context, req *mcp.CallToolRequest, args ...string) ([]byte, error) {
	return s.replayAs(ctx, req, false, args...)
}

// replayAs is replay; undecided says exit 1 is a result too (the same
// report, asked for again in another format, could not decide).
func (s *Server) replayAs(ctx context.Context, req *mcp.CallToolRequest, undecided bool, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.cfg.Replay, args...)
	cmd.Dir = s.cfg.Dir
	cmd.Env = append(append(cmd.Environ(), s.cfg.Env...), "REPLAY_PROGRESS=json")
	// A cancelled call interrupts the child, which stops its builds and
	// removes its temporary files as on Ctrl-C; it is killed if it lingers.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = s.cfg.StopTimeout
	var stdout bytes.Buffer
	stderr := &stderrLines{notify: progressNotifier(ctx, req)}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	stderr.flush()
	var exit *exec.ExitError
	switch {
	case err == nil, errors.As(err, &exit) && exit.ExitCode() == exitRegression:
		return stdout.Bytes(), nil
	case errors.As(err, &exit) && exit.ExitCode() == 1 && (undecided || undecidedReport(stdout.Bytes())):
		// Could not tell, or interrupted: the report says why, and is the
		// result an agent needs (its undecided or interrupted key).
		return stdout.Bytes(), nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("replay %s: cancelled", args[0])
	case errors.As(err, &exit):
		msg := stderr.last()
		if msg == "" {
			msg = fmt.Sprintf("replay %s: %v", args[0], err)
		}
		return nil, errors.New(msg)
	}
	return nil, fmt.Errorf("run replay %s: %w", args[0], err)
}

// stderrLines reads a child's stderr: progress lines go to notify, the
// others are kept for the message of a failure.
type stderrLines struct {
	notify  func(report.ProgressEvent)
	partial []byte
	lines   []string // the last few that are no progress
}

func (s *stderrLines) Write(p []byte) (int, error) {
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.line(string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
	return len(p), nil
}

func (s *stderrLines) flush() {
	if len(s.partial) > 0 {
		s.line(string(s.partial))
		s.partial = nil
	}
}

func (s *stderrLines) line(l string) {
	l = strings.TrimRight(l, "\r")
	if strings.HasPrefix(l, "{") {
		var ev report.ProgressEvent
		if json.Unmarshal([]byte(l), &ev) == nil && ev.Progress != "" {
			if s.notify != nil {
				s.notify(ev)
			}
			return
		}
	}
	if strings.TrimSpace(l) == "" {
		return
	}
	if s.lines = append(s.lines, l); len(s.lines) > 20 {
		s.lines = s.lines[1:]
	}
}

// last is the child's last line: the error replay prints as it exits.
func (s *stderrLines) last() string {
	if len(s.lines) == 0 {
		return ""
	}
	return s.lines[len(s.lines)-1]
}

// progressNotifier turns progress lines into notifications for the
// client's progress token; nil when the call has none. Progress is the
// child's time so far in seconds (made to rise with every notification, as
// the protocol wants), total the time it should take when the current
// phase has a known end.
func progressNotifier(ctx context.Context, req *mcp.CallToolRequest) func(report.ProgressEvent) {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	var last float64
	return func(ev report.ProgressEvent) { // called from one goroutine: the child's stderr
		p := max(ev.Elapsed, last+0.001)
		last = p
		params := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Message: ev.Message}
		if ev.Remaining > 0 {
			params.Total = math.Round((ev.Elapsed+ev.Remaining)*10) / 10
		}
		req.Session.NotifyProgress(ctx, params) // best effort: a client gone is seen by the call itself
	}
}

// undecidedReport reports whether out is a report of a run or comparison
// that could not decide (wiring faults, goals not evaluated, no endpoint
// judged) or was interrupted: replay exits 1 with it, yet it is a result.
func undecidedReport(out []byte) bool {
	var doc struct {
		Undecided   string `json:"undecided"`
		Interrupted bool   `json:"interrupted"`
	}
	return json.Unmarshal(out, &doc) == nil && (doc.Undecided != "" || doc.Interrupted)
}
