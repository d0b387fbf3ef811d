package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// leftovers are the directory and the files a run or a comparison
// creates, removed when it fails, so that a command that could not run
// leaves nothing behind. A log that holds output (a build's, the reset
// command's) is kept, and the error names it: it is where a user learns
// why the build or the reset failed.
type leftovers struct {
	dir   string   // the directory created; "" when it existed
	files []string // files that did not exist before
	logs  []string // the logs among files
}

// file notes path, unless it exists already; log marks a log.
func (l *leftovers) file(path string, log bool) {
	if path == "" {
		return
	}
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return
	}
	l.files = append(l.files, path)
	if log {
		l.logs = append(l.logs, path)
	}
}

// mkdir creates dir (and its parents) when missing, noting it.
func (l *leftovers) mkdir(dir string) error {
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		return os.MkdirAll(dir, 0o755) // exists, or says why not
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	l.dir = dir
	return nil
}

// clean removes what was noted after err, which it returns naming the
// logs kept.
func (l *leftovers) clean(err error) error {
	var kept []string
	for _, p := range l.files {
		if fi, statErr := os.Stat(p); statErr == nil && fi.Size() > 0 && slices.Contains(l.logs, p) {
			kept = append(kept, p)
			continue
		}
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} { // SQLite's side files
			os.Remove(p + suffix)
		}
	}
	if l.dir != "" {
		entries, _ := os.ReadDir(l.dir)
		for _, e := range entries {
			if p := filepath.Join(l.dir, e.Name()); !slices.Contains(kept, p) {
				os.RemoveAll(p)
			}
		}
		os.Remove(l.dir) // when empty
	}
	if len(kept) > 0 {
		return fmt.Errorf("%w (logs kept: %s)", err, strings.Join(kept, ", "))
	}
	return err
}
