package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/replaykit/replay/session"
)

// urlBuildNotice returns a session.Config.Listening that tells the user,
// on w, how to start a build given as a URL: its mock and its SQL counter.
// In `compare` it names the side; in `run` (paired false) it does not.
func urlBuildNotice(w io.Writer, paired bool) func(*session.Side) {
	return func(s *session.Side) {
		if s.URL() == "" {
			return
		}
		prefix, build, started := "", "the build", "the build"
		if paired {
			prefix, build, started = s.Name()+" ", "the "+s.Name(), "the "+s.Name()+" build"
		}
		var parts []string
		if addr := s.MockAddr(); addr != "" {
			services := strings.Join(s.MockServices(), ", ")
			if services == "" {
				services = "no recorded upstream"
			}
			fmt.Fprintf(w, "%smock: answering %s on %s\n", prefix, services, addr)
			wi := s.Wiring()
			parts = append(parts, "HTTP_PROXY=http://"+addr, "HTTPS_PROXY=http://"+addr, "NO_PROXY=localhost,127.0.0.1,::1",
				"SSL_CERT_FILE="+wi.CABundle, "NODE_EXTRA_CA_CERTS="+wi.CACert)
		}
		if addr := s.SQLAddr(); addr != "" {
			fmt.Fprintf(w, "%ssqlcount: counting SQL on %s in front of %s; point %s's database at %s\n", prefix, addr, s.Wiring().Postgres, build, addr)
		}
		if len(parts) > 0 {
			fmt.Fprintf(w, "start %s with:\n  %s\n", started, strings.Join(parts, " "))
		}
		if len(parts) > 0 || s.SQLAddr() != "" {
			fmt.Fprintf(w, "waiting for %s at %s…\n", build, s.URL())
		}
	}
}
