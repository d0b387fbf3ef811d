package sqlcore

import (
	"log/slog"
	"time"
)

// guard closes a client connection (with stop) that has not finished its
// startup and authentication within the startup timeout of its accept, or
// that idles (no statement in progress, no traffic either way) for the
// idle timeout. It returns when done is closed or once it has closed the
// connection.
func (p *Proxy) guard(s *feeds, accepted time.Time, stop func(), done <-chan struct{}, log *slog.Logger) {
	if p.startupTimeout <= 0 && p.idleTimeout <= 0 {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			wait, reason := p.check(s, accepted, now)
			if reason == "" {
				t.Reset(wait)
				continue
			}
			if reason == "idle" {
				p.idleClosed.Add(1)
				log.Warn("sqlcount: closing idle client connection", "idle", p.idleTimeout.String())
			} else {
				p.startupClosed.Add(1)
				log.Info("sqlcount: closing client connection: not authenticated in time", "startup_timeout", p.startupTimeout.String())
			}
			stop()
			return
		}
	}
}

// check says why the connection must close now ("startup" or "idle"), or
// how long until it should be checked again.
func (p *Proxy) check(s *feeds, accepted, now time.Time) (time.Duration, string) {
	if !s.s.Ready() {
		// Startup takes milliseconds: look again soon to start the idle
		// watch then.
		const poll = 50 * time.Millisecond
		if p.startupTimeout <= 0 {
			return poll, ""
		}
		if d := accepted.Add(p.startupTimeout).Sub(now); d > 0 {
			return min(d, poll), ""
		}
		return 0, "startup"
	}
	if p.idleTimeout <= 0 {
		return time.Hour, ""
	}
	if s.s.Busy() {
		return p.idleTimeout, ""
	}
	if d := time.Unix(0, s.last.Load()).Add(p.idleTimeout).Sub(now); d > 0 {
		return d, ""
	}
	return 0, "idle"
}
