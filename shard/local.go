package shard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Local runs N shards of one command here, as child processes of the
// replay binary, with the barrier on loopback.
type Local struct {
	// Exe is the replay binary (empty: this one); Args the command's arguments as given
	// (e.g. "run --snapshot s.snap … --shards 3 --local --out r.run"):
	// --shards, --local, --out and --format are replaced in each child.
	Exe  string
	Args []string
	N    int
	// Dir receives each shard's output: shard-K/ (compare) or shard-K.run
	// (run), and shard-K.log, its stdout and stderr.
	Dir string
}

// ShardError is a shard process that failed; ExitCode is its own (a
// barrier's failure keeps its code: the run is invalid).
type ShardError struct {
	Spec Spec
	Code int
	Last string // the last line it wrote
	Log  string
}

func (e *ShardError) Error() string {
	return fmt.Sprintf("shard %s exited with status %d: %s (log: %s)", e.Spec, e.Code, e.Last, e.Log)
}

// ExitCode is the shard's exit code when it is a barrier's, else 1.
func (e *ShardError) ExitCode() int {
	if e.Code >= ExitLate && e.Code <= ExitWrongShard {
		return e.Code
	}
	return 1
}

// stripped are the flags Local replaces in each child: with a value or not.
var stripped = map[string]bool{"shards": true, "out": true, "format": true, "local": false, "shard": true, "barrier": true, "dashboard": true, "dashboard-linger": true}

// childArgs is args without the flags Local replaces.
func childArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		takes, ok := stripped[name]
		if !strings.HasPrefix(a, "--") || !ok {
			out = append(out, a)
			continue
		}
		if takes && !hasValue {
			i++ // the value is the next argument
		}
	}
	return out
}

// Run starts the N shard processes, each writing to out(k) (its --out),
// and waits for them all. A child that ends with status 0 or 99 (goals or
// failures: judged after the merge) ran; any other status is a
// *ShardError: the first shard's is returned, with how many others failed.
func (l Local) Run(ctx context.Context, out func(k int) string) error {
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return fmt.Errorf("shards: %w", err)
	}
	if l.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("shards: %w", err)
		}
		l.Exe = exe
	}
	addr, err := freeLoopback()
	if err != nil {
		return fmt.Errorf("shards: barrier: %w", err)
	}
	base := childArgs(l.Args)
	errs := make([]error, l.N)
	var wg sync.WaitGroup
	for k := range l.N {
		args := append(append([]string(nil), base...), "--shard", Spec{k, l.N}.String(), "--barrier", addr, "--out", out(k), "--format", "json")
		logPath := filepath.Join(l.Dir, "shard-"+strconv.Itoa(k)+".log")
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = l.child(ctx, Spec{k, l.N}, args, logPath)
		}()
	}
	wg.Wait()
	return firstError(errs)
}

// firstError is the first shard's error, saying how many others failed
// (a barrier's failure often fails them all).
func firstError(errs []error) error {
	var first error
	others := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			others++
		}
	}
	if others > 0 {
		return fmt.Errorf("%w; %d more shards failed", first, others)
	}
	return first
}

// child runs one shard process with its output in logPath.
func (l Local) child(ctx context.Context, s Spec, args []string, logPath string) error {
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("shard %s: %w", s, err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, l.Exe, args...)
	cmd.Stdout, cmd.Stderr = log, log
	err = cmd.Run()
	var ee *exec.ExitError
	if err == nil || (errors.As(err, &ee) && ee.ExitCode() == 99) {
		return nil
	}
	code := 1
	if ee != nil {
		code = ee.ExitCode()
	}
	return &ShardError{Spec: s, Code: code, Last: lastLine(logPath, err), Log: logPath}
}

// lastLine is the last line of the file at path, or err's text.
func lastLine(path string, err error) string {
	f, ferr := os.Open(path)
	if ferr != nil {
		return err.Error()
	}
	defer f.Close()
	last := err.Error()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t := strings.TrimSpace(sc.Text()); t != "" {
			last = t
		}
	}
	return last
}

// freeLoopback is a loopback address with a port free a moment ago.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// RunFile runs `replay run` as l.N shards and merges their run files into
// out.
func (l Local) RunFile(ctx context.Context, out string) error {
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("shards: %s exists: give another --out", out)
	}
	path := func(k int) string { return filepath.Join(l.Dir, "shard-"+strconv.Itoa(k)+".run") }
	if err := l.Run(ctx, path); err != nil {
		return err
	}
	return Merge(ctx, out, l.paths(path))
}

// Compare runs `replay compare` as l.N shards, each in its own directory
// under l.Dir, and merges each side's run files into dir/NAME for each
// name of names (the sides' run files, e.g. baseline.run, candidate.run);
// it returns the merged files.
func (l Local) Compare(ctx context.Context, dir string, names ...string) ([]string, error) {
	sub := func(k int) string { return filepath.Join(l.Dir, "shard-"+strconv.Itoa(k)) }
	if err := l.Run(ctx, sub); err != nil {
		return nil, err
	}
	var merged []string
	for _, name := range names {
		out := filepath.Join(dir, name)
		if err := Merge(ctx, out, l.paths(func(k int) string { return filepath.Join(sub(k), name) })); err != nil {
			return nil, err
		}
		merged = append(merged, out)
	}
	return merged, nil
}

func (l Local) paths(path func(k int) string) []string {
	var ps []string
	for k := range l.N {
		ps = append(ps, path(k))
	}
	return ps
}
