package dashboard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"github.com/replaykit/replay/internal/listen"
	"github.com/replaykit/replay/replayer"
	"github.com/replaykit/replay/report"
	"github.com/replaykit/replay/session"
	"github.com/replaykit/replay/snapshots"
)

// Config is a dashboard's settings.
type Config struct {
	// Addr is where the dashboard listens, "[HOST]:PORT" (loopback when
	// it names no host; port 0 picks a free one); required.
	Addr string
	// Notes receives the line with the dashboard's URL and the linger
	// note; nil discards them.
	Notes io.Writer
	// Linger keeps the dashboard serving that long after the session
	// ends, in Close; zero stops it at once.
	Linger time.Duration
	// Window is the width of one point of the time series; zero means
	// DefaultWindow.
	Window time.Duration
}

// Dashboard serves the live page of one session: give it to the session as
// its Observer (session.Config.Observer), and Close it when the command is
// done.
type Dashboard struct {
	cfg Config

	mu       sync.Mutex
	ctx      context.Context
	srv      *http.Server
	served   chan struct{} // closed when Serve returns
	url      string
	feed     *feed
	status   Status
	finished time.Time
	html     []byte // the HTML report, rendered at Finish
	htmlFile string // where the CLI writes it, when it does
}

var _ session.Observer = (*Dashboard)(nil)

// Status is where the session is, as the feed tells it.
type Status struct {
	// Command is "run" or "compare"; Sides the sides' names.
	Command string   `json:"command"`
	Sides   []string `json:"sides"`
	// State is "starting" (builds starting), "running", "done" or
	// "failed".
	State string `json:"state"`
	// Elapsed is the time since the session started, in seconds.
	Elapsed float64 `json:"elapsed_s"`
	// Side, Phase, Slice and Slices say what runs now (Slice and Slices
	// from 1 in an interleaved comparison's load).
	Side   string `json:"side,omitempty"`
	Phase  string `json:"phase,omitempty"`
	Slice  int    `json:"slice,omitempty"`
	Slices int    `json:"slices,omitempty"`
	// Call is the progress of the current phase or slice.
	Call CallProgress `json:"call"`
	// Looks are the findings of the looks of a comparison that runs until
	// it knows, one line each.
	Looks []string `json:"looks,omitempty"`
	// Verdict is, once done, a comparison's verdict ("regression", …) or
	// a run's ("passed" or "failed"); "interrupted" for either when it was
	// stopped before its load ended.
	Verdict string `json:"verdict,omitempty"`
	// Error is the error that ended the session.
	Error string `json:"error,omitempty"`
	// Report is the path of the HTML report on this server once there is
	// one; ReportFile where the command writes it, when it does.
	Report     string `json:"report,omitempty"`
	ReportFile string `json:"report_file,omitempty"`
}

// CallProgress is the progress of one phase or slice of one side.
type CallProgress struct {
	Elapsed   float64 `json:"elapsed_s"`
	Remaining float64 `json:"remaining_s"`
	Done      int64   `json:"done"`
	Total     int64   `json:"total"`
	Rate      float64 `json:"rate"`
	Failures  int64   `json:"failures"`
	InFlight  int64   `json:"in_flight"`
}

// New returns a dashboard of cfg; it listens when the session starts it.
func New(cfg Config) *Dashboard {
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Notes == nil {
		cfg.Notes = io.Discard
	}
	return &Dashboard{cfg: cfg, status: Status{State: "starting"}}
}

// Start listens on cfg.Addr through w.Limits (telling w.Warn when the
// address is reachable from the network), prints the URL to cfg.Notes and
// serves until ctx ends or Close.
func (d *Dashboard) Start(ctx context.Context, w session.Watch) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.srv != nil {
		return errors.New("dashboard: started twice")
	}
	l, err := w.Limits.Listen(d.cfg.Addr, "dashboard", "anyone who reaches it sees the replayed endpoints and their figures", listen.WarnLogger(w.Warn), w.Warn)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	start := time.Now()
	d.ctx = ctx
	d.url = "http://" + browseAddr(d.cfg.Addr, l.Addr()) + "/"
	d.feed = newFeed(start, d.cfg.Window, w.Sides)
	d.status.Command, d.status.Sides = w.Command, w.Sides
	d.srv = w.Limits.Server(d.handler(l.Addr()), listen.WarnLogger(w.Warn))
	d.served = make(chan struct{})
	go func() {
		defer close(d.served)
		_ = d.srv.Serve(l) // ErrServerClosed at Close
	}()
	go func() {
		select {
		case <-ctx.Done():
			_ = d.srv.Close()
		case <-d.served:
		}
	}()
	fmt.Fprintf(d.cfg.Notes, "replay: dashboard at %s\n", d.url)
	return nil
}

// browseAddr is the address a browser on this machine opens for a
// listener on addr: its host, or loopback for an unspecified one.
func browseAddr(addr string, l net.Addr) string {
	_, port, _ := net.SplitHostPort(l.String())
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = listen.Loopback
	}
	return net.JoinHostPort(host, port)
}

// URL is the dashboard's address, "http://HOST:PORT/"; empty before Start.
func (d *Dashboard) URL() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.url
}

// Result counts one result of side.
func (d *Dashboard) Result(side string, res *snapshots.Result) { d.feed.add(side, res) }

// Progress notes where the session is.
func (d *Dashboard) Progress(p replayer.CompareProgress) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.status.State == "starting" {
		d.status.State = "running"
	}
	if p.Phase == replayer.PhaseLook {
		d.status.Looks = append(d.status.Looks, p.Note)
		return
	}
	d.status.Side, d.status.Phase, d.status.Slice, d.status.Slices = p.Side, p.Phase, p.Slice, p.Slices
	pr := p.Progress
	if p.Phase == snapshots.PhaseLoad && pr.Elapsed > 0 {
		now := time.Now()
		d.feed.progress(p.Side, now.Add(-pr.Elapsed), now, pr.Final)
	}
	d.status.Call = CallProgress{Elapsed: pr.Elapsed.Seconds(), Remaining: pr.Remaining.Seconds(), Done: pr.Done, Total: pr.Total,
		Rate: pr.Rate, Failures: pr.Failures, InFlight: pr.InFlight}
}

// Finish renders the session's HTML report, to serve at /report.
func (d *Dashboard) Finish(o session.Outcome) {
	var b bytes.Buffer
	var err error
	verdict := ""
	switch {
	case o.Comparison != nil:
		err = report.WriteComparison(&b, report.HTML, o.Comparison)
		verdict = string(o.Comparison.Comparison.Verdict)
		if o.Comparison.Interrupted() {
			verdict = report.OutcomeInterrupted
		}
	case o.Run != nil:
		err = report.WriteRun(&b, report.HTML, o.Run)
		verdict = o.Run.Outcome()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.finished = time.Now()
	d.status.State, d.status.Verdict = "done", verdict
	d.status.Side, d.status.Phase, d.status.Slice, d.status.Slices, d.status.Call = "", "", 0, 0, CallProgress{}
	if o.Err != nil {
		d.status.State, d.status.Error = "failed", o.Err.Error()
	}
	if err == nil && b.Len() > 0 {
		d.html, d.status.Report = b.Bytes(), "/report"
		if o.Dir != "" {
			d.htmlFile = filepath.Join(o.Dir, report.HTML.FileName())
		}
	}
}

// Close stops the dashboard; when the session finished, it first keeps
// serving for cfg.Linger (or until the ctx given to Start ends). It may be
// called more than once, and before Start.
func (d *Dashboard) Close() {
	d.mu.Lock()
	srv, ctx, finished, url := d.srv, d.ctx, !d.finished.IsZero(), d.url
	d.mu.Unlock()
	if srv == nil {
		return
	}
	if finished && d.cfg.Linger > 0 && ctx.Err() == nil {
		fmt.Fprintf(d.cfg.Notes, "replay: dashboard stays at %s for %s (Ctrl-C ends it)\n", url, d.cfg.Linger)
		t := time.NewTimer(d.cfg.Linger)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	_ = srv.Close()
	<-d.served
}
