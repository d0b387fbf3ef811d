package snapshots

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOpenPermissionDenied: a snapshot the user may not read is "open
// snapshot PATH: permission denied", not SQLite's "unable to open database
// file (14)". As root, which reads anything, the check runs in a copy of
// the test binary started as nobody.
func TestOpenPermissionDenied(t *testing.T) {
	if path := os.Getenv("REPLAY_TEST_UNREADABLE"); path != "" {
		checkUnreadable(t, path)
		return
	}
	dir := filepath.Join(t.TempDir(), "perm")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "secret.snap")
	w, err := Create(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		checkUnreadable(t, path)
		return
	}
	tmp := filepath.Clean(os.TempDir())
	for d := dir; d != tmp; d = filepath.Dir(d) { // let nobody reach it
		if st, err := os.Stat(d); err != nil || d == filepath.Dir(d) {
			t.Skipf("%s is not under the temp dir %s", dir, tmp)
		} else if st.Mode().Perm()&0o005 != 0o005 {
			os.Chmod(d, st.Mode().Perm()|0o005)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "snapshots.test")
	if err := os.WriteFile(bin, self, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestOpenPermissionDenied$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "REPLAY_TEST_UNREADABLE="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("as nobody: %v\n%s", err, out)
	}
}

func checkUnreadable(t *testing.T, path string) {
	_, err := Open(path)
	want := "open snapshot " + path + ": permission denied"
	if err == nil || err.Error() != want {
		t.Errorf("Open of an unreadable snapshot: %v, want %q", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "(14)") {
		t.Errorf("SQLite's code leaks: %v", err)
	}
}
