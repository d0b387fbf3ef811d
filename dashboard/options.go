package dashboard

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/session"
)

// Options are the dashboard's flags, for a command that replays: register
// them with AddFlags, give Observer to the session and Close the dashboard
// when the command is done.
type Options struct {
	// Addr is --dashboard: where to serve the dashboard; empty serves none.
	Addr string
	// Linger is --dashboard-linger: how long to keep serving after the
	// session ends.
	Linger time.Duration

	d *Dashboard
}

// AddFlags registers --dashboard and --dashboard-linger on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.Var(addrValue{&o.Addr}, "dashboard", "serve a live dashboard of the load at `ADDR` ([HOST]:PORT, loopback unless a host is given; :0 picks a port)")
	fs.Var(lingerValue{&o.Linger}, "dashboard-linger", "keep the dashboard serving `D` after the end (Ctrl-C ends it)")
}

// Observer returns the dashboard to give the session (session.Config.
// Observer), writing its URL to notes; nil (no observer at all) without
// --dashboard.
func (o *Options) Observer(notes io.Writer) session.Observer {
	if o.Addr == "" {
		return nil
	}
	o.d = New(Config{Addr: o.Addr, Notes: notes, Linger: o.Linger})
	return o.d
}

// Close closes the dashboard Observer made, after the linger; a no-op
// without one.
func (o *Options) Close() {
	if o.d != nil {
		o.d.Close()
	}
}

// addrValue is --dashboard: a listen address, checked as it is given.
type addrValue struct{ s *string }

func (v addrValue) String() string {
	if v.s == nil {
		return ""
	}
	return *v.s
}

func (v addrValue) Set(s string) error {
	if _, err := listen.Addr(s); err != nil {
		return fmt.Errorf("want [HOST]:PORT, e.g. :8090 or 127.0.0.1:0: %w", err)
	}
	*v.s = s
	return nil
}

func (v addrValue) Type() string { return "addr" }

// lingerValue is --dashboard-linger: a duration that is not negative.
type lingerValue struct{ d *time.Duration }

func (v lingerValue) String() string {
	if v.d == nil {
		return "0s"
	}
	return v.d.String()
}

func (v lingerValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("%q: want a duration such as 30s or 5m", s)
	}
	*v.d = d
	return nil
}

func (v lingerValue) Type() string { return "duration" }
