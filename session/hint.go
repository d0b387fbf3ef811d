package session

import (
	"fmt"
	"io"
	"strings"
)

// WriteStartHint tells a user, on w, how to start a build given as a URL
// so that it goes through the side's mock and SQL counter, and that replay
// waits for it; nothing for a build replay starts. One of two sides is
// named. Config.Listening is the moment to call it.
func (s *Side) WriteStartHint(w io.Writer) {
	if s.URL() == "" {
		return
	}
	prefix, build, started := "", "the build", "the build"
	if s.paired {
		prefix, build, started = s.Name()+" ", "the "+s.Name(), "the "+s.Name()+" build"
	}
	var parts []string
	if addr := s.MockAddr(); addr != "" {
		services := strings.Join(s.MockServices(), ", ")
		if services == "" {
			services = "no recorded upstream"
		}
		fmt.Fprintf(w, "%smock: answering %s on %s\n", prefix, services, addr)
		parts = append(parts, "HTTP_PROXY=http://"+addr, "HTTPS_PROXY=http://"+addr, "NO_PROXY=localhost,127.0.0.1,::1",
			"SSL_CERT_FILE="+s.wiring.CABundle, "NODE_EXTRA_CA_CERTS="+s.wiring.CACert)
	}
	for _, r := range s.wiring.Databases {
		fmt.Fprintf(w, "%ssqlcount: counting SQL on %s in front of %s; point %s's database at %s\n", prefix, r.Counter, r.Upstream, build, r.Counter)
		if r.App != "" && r.Protocol.AppVar != "" {
			// The counter tells the builds apart by it (analyzer.CompareFaults).
			parts = append(parts, r.Protocol.AppVar+"="+r.App)
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "start %s with:\n  %s\n", started, strings.Join(parts, " "))
	}
	if len(parts) > 0 || s.SQLAddr() != "" {
		fmt.Fprintf(w, "waiting for %s at %s…\n", build, s.URL())
	}
}
