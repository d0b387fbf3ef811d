// Command replay records a service's traffic, replays it against two builds
// and explains what got slower and why. See README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/replaykit/replay/internal/buildinfo"
	_ "github.com/replaykit/replay/internal/debugserve" // REPLAY_PPROF
	"github.com/replaykit/replay/session"
)

// Exit codes, as DESIGN.md's CLI contract gives them.
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitRegression = 99
)

// usageError marks an error as bad usage (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// errFailed reports that goals were missed or a regression was found (exit
// 99); the report has already been printed.
var errFailed = errors.New("goals missed or regression found")

// verdict is errFailed unless passed.
func verdict(passed bool) error {
	if !passed {
		return errFailed
	}
	return nil
}

// streams are the standard streams a command writes to; tests use buffers.
type streams struct {
	in       io.Reader
	out, err io.Writer
	// outTTY reports whether out is a terminal (progress bars are drawn only then).
	outTTY bool
}

func main() {
	debug.SetMemoryLimit(min(debug.SetMemoryLimit(-1), session.MemoryLimit)) // GOMEMLIMIT may lower it
	os.Exit(run(os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr, outTTY: isTerminal(os.Stdout)}))
}

// run executes the CLI with args and returns the exit code.
func run(args []string, s streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(s)
	root.SetArgs(args)
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(nameCommand(root, cmd, err), s.err)
}

// nameCommand puts the command's name before a usage error cobra worded
// ("run: required flag(s) \"out\" not set"), so a script's log says which of
// its replay commands was wrong.
func nameCommand(root, cmd *cobra.Command, err error) error {
	if err == nil || cmd == nil || cmd == root || !isCobraUsage(err) {
		return err
	}
	return usageError{fmt.Errorf("%s: %w", strings.TrimPrefix(cmd.CommandPath(), root.Name()+" "), err)}
}

// exitCode maps an error to the exit code and prints it as one line.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, errFailed) {
		return exitRegression
	}
	fmt.Fprintf(stderr, "replay: %v\n", err)
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	if ec := (interface{ ExitCode() int })(nil); errors.As(err, &ec) {
		return ec.ExitCode() // a shard's barrier: shard.Exit*
	}
	return exitError
}

// isCobraUsage recognises the usage errors cobra returns as plain errors.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag", "required flag", "accepts ", "requires at least", "invalid argument"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func newRootCmd(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "replay",
		Short:         "Record a service's traffic, replay it against two builds, and explain what got slower",
		Long:          longHelp("replay"),
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildinfo.Read().String(), // --version
	}
	root.SetVersionTemplate("replay {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(
		newCmdRecord(s),
		newCmdInspect(s),
		newCmdSnapshot(s),
		newCmdCA(s),
		newCmdMock(s),
		newCmdSQLCount(s),
		newCmdRun(s),
		newCmdCompare(s),
		newCmdReport(s),
		newCmdK8s(s),
		newCmdMerge(s),
		newCmdDemo(s),
		newCmdMCP(),
		&cobra.Command{Use: "version", Short: "Print replay's version, the VCS revision and time it was built from", Args: exactArgs(0),
			RunE: func(*cobra.Command, []string) error {
				_, err := fmt.Fprintf(s.out, "replay %s\n", buildinfo.Read())
				return err
			}},
	)
	return root
}
