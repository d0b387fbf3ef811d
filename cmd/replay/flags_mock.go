package main

import (
	"net"
	"slices"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/mock"
)

// addCADirFlag declares --ca-dir, the same on every command that uses
// replay's CA.
func addCADirFlag(f *pflag.FlagSet, dir *string) {
	f.StringVar(dir, "ca-dir", "", "`DIR` of replay's CA, which intercepts HTTPS and signs TLS certificates (default $XDG_CONFIG_HOME/replay/ca or ~/.config/replay/ca)")
}

// mockBehaviour is how a mock answers: --mock-timing, --on-miss and
// --allow-truncated, the same on `replay mock`, `run` and `compare`.
type mockBehaviour struct {
	timing, onMiss string
	allowTruncated bool // also lets run and compare replay requests cut at recording
}

func (b *mockBehaviour) addFlags(f *pflag.FlagSet) {
	f.StringVar(&b.timing, "mock-timing", mock.TimingNone, "`WHEN` mocks answer: none (at once) or recorded (after the recorded upstream latency)")
	f.StringVar(&b.onMiss, "on-miss", mock.OnMissError, "`WHAT` happens to a call a mock cannot answer: error (a 502 explaining the miss) or passthrough (the real upstream answers)")
	f.BoolVar(&b.allowTruncated, "allow-truncated", false, "replay requests, and serve mocked responses, whose body was cut at recording (--body-limit), counted apart in the reports (default: refuse them)")
}

// validate checks the flags; its errors are usage errors prefixed with cmd.
func (b *mockBehaviour) validate(cmd string) error {
	switch b.timing {
	case mock.TimingNone, mock.TimingRecorded:
	default:
		return usagef("%s: --mock-timing %q: want recorded or none", cmd, b.timing)
	}
	switch b.onMiss {
	case mock.OnMissError, mock.OnMissPassthrough:
	default:
		return usagef("%s: --on-miss %q: want error or passthrough", cmd, b.onMiss)
	}
	return nil
}

// apply sets c's behaviour from the flags.
func (b *mockBehaviour) apply(c *mock.Config) *mock.Config {
	c.OnMiss, c.Timing, c.AllowTruncated = b.onMiss, b.timing, b.allowTruncated
	return c
}

// mockFlags mock a build's upstreams during a replay (`run`, `compare`):
// --mock, --mock-timing, --on-miss and --ca-dir.
type mockFlags struct {
	mocks []string
	mockBehaviour
	caDir string
}

func (m *mockFlags) addFlags(f *pflag.FlagSet) {
	f.StringArrayVar(&m.mocks, "mock", nil, "mock upstream `HOST:PORT` from the snapshot, on each side its own mock (repeatable; 'all' mocks every recorded upstream)")
	m.mockBehaviour.addFlags(f)
	addCADirFlag(f, &m.caDir)
}

func (m *mockFlags) used() bool { return len(m.mocks) > 0 }

// validate checks the flags; its errors are usage errors prefixed with cmd.
func (m *mockFlags) validate(cmd string) error {
	for _, s := range m.mocks {
		if s == "all" {
			continue
		}
		if h, port, err := net.SplitHostPort(s); err != nil || h == "" || port == "" {
			return usagef("%s: --mock %q: want HOST:PORT of a recorded upstream, e.g. catalog.example.com:443", cmd, s)
		}
	}
	return m.mockBehaviour.validate(cmd)
}

// config returns the mock of outbound's services; nil without --mock.
func (m *mockFlags) config(snap mock.Recording) *mock.Config {
	if !m.used() {
		return nil
	}
	var services []string
	if !slices.Contains(m.mocks, "all") {
		services = m.mocks
	}
	return m.apply(&mock.Config{Snapshot: snap, Services: services})
}
