package mariadbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"
)

// New starts a server for the test, stopped and removed when the test ends
// (also when it fails).
func New(t testing.TB, cfg ...Config) *Server {
	t.Helper()
	var c0 Config
	if len(cfg) > 0 {
		c0 = cfg[0]
	}
	s, err := Start(context.Background(), c0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Stop() })
	return s
}

var shared struct {
	sync.Mutex
	s   *Server
	err error
}

// Main runs the tests of a package whose tests call Shared, then stops the
// shared server. Use it from TestMain: os.Exit(mariadbtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	StopShared()
	return code
}

// StopShared stops the shared server, if one was started (for a TestMain
// that runs another helper's Main).
func StopShared() {
	shared.Lock()
	if shared.s != nil {
		shared.s.Stop()
	}
	shared.Unlock()
}

// Shared returns the package's shared server, started on first use with
// the general log on (the package's TestMain must call Main).
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.s == nil && shared.err == nil {
		shared.s, shared.err = Start(context.Background(), Config{GeneralLog: true})
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// Database creates a database on s for the test and returns its name.
func Database(t testing.TB, s *Server) string {
	t.Helper()
	name, err := s.CreateDatabase(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func randomSuffix() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
