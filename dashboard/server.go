package dashboard

import (
	_ "embed"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"
)

//go:embed page.html
var page []byte

// Feed is the document GET /api/feed returns: the status and the figures
// per side and per endpoint, with the points of the time series after the
// window the request names (?since=I; all without it).
type Feed struct {
	Status Status `json:"status"`
	// Window is the width of one point, in seconds; Now the index of the
	// window in progress: the points up to Now-1 are final, so the next
	// request asks ?since=Now-1.
	Window float64 `json:"window_s"`
	Now    int     `json:"now"`
	// Sides are the sides' totals and points; Endpoints each endpoint's,
	// sorted by name, its sides in the order of Sides.
	Sides     []SideFeed     `json:"sides"`
	Endpoints []EndpointFeed `json:"endpoints"`
}

// Security headers: the page loads nothing from anywhere else (its script
// and style are inline; it fetches its own feed).
const (
	pagePolicy   = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'"
	reportPolicy = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
)

func (d *Dashboard) handler(local net.Addr) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		header(w, "text/html; charset=utf-8", pagePolicy)
		w.Write(page)
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /api/feed", d.serveFeed)
	mux.HandleFunc("GET /report", d.serveReport)
	return hostCheck(local, mux)
}

func header(w http.ResponseWriter, contentType, policy string) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if policy != "" {
		h.Set("Content-Security-Policy", policy)
	}
}

// hostCheck refuses requests to a loopback listener that name another host
// than a loopback one: a web page the user visits cannot read the
// dashboard through a DNS name rebound to 127.0.0.1.
func hostCheck(local net.Addr, next http.Handler) http.Handler {
	ta, ok := local.(*net.TCPAddr)
	if !ok || !ta.IP.IsLoopback() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "replay dashboard: open it as http://"+local.String()+"/", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// feedAt returns the feed with the points after window since.
func (d *Dashboard) feedAt(since int) Feed {
	d.mu.Lock()
	st := d.status
	st.Looks = append([]string(nil), st.Looks...)
	finished := d.finished
	file := d.htmlFile
	d.mu.Unlock()
	now := time.Now()
	if !finished.IsZero() {
		now = finished.Add(d.cfg.Window) // every window is final
	}
	st.Elapsed = now.Sub(d.feed.start).Seconds()
	if !finished.IsZero() {
		st.Elapsed = finished.Sub(d.feed.start).Seconds()
		if fresh(file, finished) {
			st.ReportFile = file
		}
	}
	cur := d.feed.index(now)
	f := Feed{Status: st, Window: d.cfg.Window.Seconds(), Now: cur}
	f.Sides, f.Endpoints = d.feed.read(cur, since)
	return f
}

// fresh reports whether the file at path was written since t (the command
// writes its reports after the session finished).
func fresh(path string, t time.Time) bool {
	if path == "" {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && !fi.ModTime().Before(t.Add(-time.Second))
}

func (d *Dashboard) serveFeed(w http.ResponseWriter, r *http.Request) {
	since := -1
	if s := r.URL.Query().Get("since"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < -1 {
			http.Error(w, "since: want a window index (-1 or more)", http.StatusBadRequest)
			return
		}
		since = n
	}
	header(w, "application/json", "")
	enc := json.NewEncoder(w)
	_ = enc.Encode(d.feedAt(since)) // a client gone away: nothing to do
}

// serveReport serves the HTML report: the file the command wrote, when it
// wrote one, else the one rendered at Finish.
func (d *Dashboard) serveReport(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	html, file, finished := d.html, d.htmlFile, d.finished
	d.mu.Unlock()
	if html == nil {
		http.Error(w, "replay dashboard: no report yet; it comes when the session ends", http.StatusNotFound)
		return
	}
	if fresh(file, finished) {
		if b, err := os.ReadFile(file); err == nil {
			html = b
		}
	}
	header(w, "text/html; charset=utf-8", reportPolicy)
	w.Write(html)
}
