package snapshots

import (
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenBadFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	foreignDB := func(name, ddl string) string {
		p := filepath.Join(dir, name)
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		db.Close()
		return p
	}
	// A real snapshot with its version changed, and one with its header
	// overwritten by garbage.
	good := variedSnapshot(t)
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), data...)
	for i := 0; i < 100 && i < len(corrupt); i++ {
		corrupt[i] ^= 0x5a
	}
	v99 := write("v99.snap", data)
	db, err := sql.Open("sqlite", v99)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE meta SET value = '99' WHERE key = 'version'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	run := filepath.Join(dir, "a.run")
	rw, err := CreateRun(run, RunInfo{Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(RunInfo{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		path    string
		want    string // in the message
		wantErr error  // errors.Is, when set
	}{
		{"missing", filepath.Join(dir, "nope.snap"), "no such file", nil},
		{"directory", dir, "is a directory", nil},
		{"text file", write("notes.txt", []byte("hello, this is not a database\n")), "not a SQLite database", ErrNotSnapshot},
		{"empty file", write("empty.snap", nil), "not a replay snapshot", ErrNotSnapshot},
		{"corrupt", write("corrupt.snap", corrupt), "not a", nil},
		{"truncated", write("trunc.snap", data[:len(data)/3]), "", nil},
		{"foreign sqlite", foreignDB("foreign.db", `CREATE TABLE users (id INTEGER)`), "not a replay snapshot", ErrNotSnapshot},
		{"foreign meta", foreignDB("meta.db", `CREATE TABLE meta (k TEXT)`), "not a replay snapshot", ErrNotSnapshot},
		{"version 99", v99, "version 99", ErrVersion},
		{"run file", run, "it is a run file", ErrNotSnapshot},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.path)
			if err == nil {
				// A truncated file may still open; reading must then fail.
				defer s.Close()
				if tt.name != "truncated" {
					t.Fatalf("Open(%s) succeeded", tt.path)
				}
				readErr := false
				for _, err := range s.Exchanges(t.Context(), Filter{}) {
					if err != nil {
						readErr = true
						if !strings.Contains(err.Error(), tt.path) {
							t.Errorf("read error %q does not name the file", err)
						}
					}
				}
				if !readErr {
					t.Errorf("reading a truncated file gave no error")
				}
				return
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.HasPrefix(msg, "open snapshot "+tt.path+": ") {
				t.Errorf("error %q does not name the file", msg)
			}
			if !strings.Contains(msg, tt.want) {
				t.Errorf("error %q does not say %q", msg, tt.want)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q is not %v", msg, tt.wantErr)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("error %q spans lines", msg)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.snap")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open created the missing file")
	}
	if _, err := OpenRun(good); !errors.Is(err, ErrNotSnapshot) || !strings.Contains(err.Error(), "open run "+good+": not a replay run file: it is a snapshot file") {
		t.Errorf("OpenRun(snapshot) = %v, want it to say not a replay run file", err)
	}
	empty := filepath.Join(dir, "empty.run")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRun(empty); !errors.Is(err, ErrNotSnapshot) || err.Error() != "open run "+empty+": not a replay run file" {
		t.Errorf("OpenRun(empty file) = %v, want it to say not a replay run file", err)
	}
}

func TestCreateExisting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.snap")
	if err := os.WriteFile(path, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Create(path, Options{})
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a file: %v, want ErrExists", err)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, "remove it or choose another path") {
		t.Errorf("message %q", msg)
	}
	if b, _ := os.ReadFile(path); string(b) != "keep me" {
		t.Errorf("Create changed the existing file")
	}
	if _, err := CreateRun(path, RunInfo{}); !errors.Is(err, ErrExists) {
		t.Errorf("CreateRun over a file: %v", err)
	}
}
