// Package buildinfo says which replay this is, from what the Go toolchain
// stamped into the binary: the module version, and the VCS revision and
// time it was built from (go build in a git checkout records them).
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Info is what a binary knows of its build.
type Info struct {
	// Version is the main module's version: "(devel)" for a build from a
	// checkout, a tag or pseudo-version for `go install module@version`.
	Version string
	// Revision and Time are the VCS commit and its time; empty when the
	// binary was built without VCS information (-buildvcs=false, no git).
	Revision, Time string
	// Modified reports uncommitted changes in the checkout built.
	Modified bool
	// Go is the toolchain that built it.
	Go string
}

// Read returns the running binary's Info.
func Read() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return FromBuildInfo(bi)
}

// FromBuildInfo extracts the Info of bi.
func FromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "unknown"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Modified = s.Value == "true"
		}
	}
	return in
}

// String is one line: "v1.2.0 (revision 0fda40a1c2d3, 2026-12-01T19:42:09Z,
// modified; go1.26.8)".
func (in Info) String() string {
	var parts []string
	if in.Revision != "" {
		parts = append(parts, "revision "+in.Revision[:min(12, len(in.Revision))])
	}
	if in.Time != "" {
		parts = append(parts, in.Time)
	}
	if in.Modified {
		parts = append(parts, "modified")
	}
	s := in.Version
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ")
		if in.Go != "" {
			s += "; " + in.Go
		}
		s += ")"
	} else if in.Go != "" {
		s += " (" + in.Go + ")"
	}
	return s
}
