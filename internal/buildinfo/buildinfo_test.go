package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestString(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/replaykit/replay", Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0fda40a1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7"},
			{Key: "vcs.time", Value: "2026-12-01T19:42:09Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := FromBuildInfo(bi).String(), "(devel) (revision 0fda40a1c2d3, 2026-12-01T19:42:09Z, modified; go1.26.8)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bi = &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"}}
	if got, want := FromBuildInfo(bi).String(), "v1.2.0 (go1.26.8)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
