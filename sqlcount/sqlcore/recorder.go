package sqlcore

import (
	"time"

	"github.com/replaykit/replay/snapshots"
)

// Stmt is what a wire knows of a statement's text.
type Stmt struct {
	// SQL is the text as sent; empty when unknown or not kept
	// (Recorder.KeepText).
	SQL string
	// FP is its fingerprint (Recorder.Lookup or Named); never nil for a
	// statement recorded.
	FP *Fingerprint
	// Trace is the trace id of a traceparent comment in it (TraceFromComment),
	// or "".
	Trace string
}

// Recorder counts the statements of one connection: a wire calls Record for
// every statement the server completed.
type Recorder struct {
	p    *Proxy
	conn int64
	app  *clientCount // nil when the connection was not counted
}

// Recorder returns a recorder for connection number conn that counts in no
// client's totals: for decoding a stream without a connection (fuzzing,
// benchmarks).
func (p *Proxy) Recorder(conn int64) *Recorder { return &Recorder{p: p, conn: conn} }

// Window returns the requests in flight now, for attributing a statement
// sent now.
func (r *Recorder) Window() *Window { return r.p.tracker.Window() }

// KeepText reports whether statements are to carry their SQL text (someone
// reads the statements, Config.OnStatement).
func (r *Recorder) KeepText() bool { return r.p.onStatement != nil }

// Lookup returns the fingerprint of a shape, computing it (Wire.Fingerprint)
// on first use.
func (r *Recorder) Lookup(shape []byte) *Fingerprint { return r.p.fps.lookup(shape) }

// Named returns the fingerprint with the given text (for statements whose
// text is unknown).
func (r *Recorder) Named(text string) *Fingerprint { return r.p.fps.named(text) }

// Record counts a completed statement (failed when errText is set: the
// server rejected it), attributes it to the request whose trace id it
// carries or to the one alone in flight through win (the Window when it was
// sent), and reports it. proto is snapshots.ProtocolSimple or
// ProtocolExtended; tag the server's completion tag, if any.
func (r *Recorder) Record(st Stmt, proto string, win *Window, start, end time.Time, rows int64, tag []byte, errText string) {
	p := r.p
	d := max(end.Sub(start), 0)
	failed := errText != ""
	st.FP.add(d, failed)
	if failed {
		p.errors.Add(1)
	} else {
		p.statements.Add(1)
	}
	if r.app != nil && !failed {
		r.app.statements.Add(1)
	}
	var exch int64
	if st.FP.text != "" {
		// An empty query is a pool's liveness ping ("-- ping", ";"): the
		// driver's, not the request's.
		exch = p.tracker.Attribute(st.Trace, win, stmtEvent{st.FP.text, d, failed})
		if exch == 0 && !failed && p.keepUnattr {
			p.unattr.add(start)
		}
	}
	if p.onStatement == nil {
		return
	}
	p.onStatement(&snapshots.Statement{
		ExchangeID:  exch,
		TraceID:     st.Trace,
		Conn:        r.conn,
		Start:       start,
		Duration:    d,
		Protocol:    proto,
		SQL:         st.SQL,
		Fingerprint: st.FP.text,
		Rows:        rows,
		CommandTag:  string(tag),
		Error:       errText,
	})
}
