package replayer

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// timeShift moves the timestamps of requests that lay within the
// recording's time span by the replay's offset from it (--shift-times):
// RFC 3339 times anywhere in the query, a header or the body, and Unix
// seconds or milliseconds as a query value or a JSON number.
type timeShift struct {
	on         bool
	from, to   time.Time // the recording's span
	offset     atomic.Int64
	shifted    atomicCount
	offsetOnce atomic.Bool
}

func newTimeShift(seq requestSeq) *timeShift {
	ts := &timeShift{on: true}
	for i := range seq.len() {
		st := seq.start(i)
		if st.IsZero() {
			continue
		}
		if ts.from.IsZero() || st.Before(ts.from) {
			ts.from = st
		}
		if end := st.Add(seq.at(i).dur); end.After(ts.to) {
			ts.to = end
		}
	}
	if ts.from.IsZero() {
		ts.on = false
	}
	return ts
}

// start fixes the offset at the first load call: now minus the
// recording's start.
func (ts *timeShift) start(now time.Time) {
	if ts != nil && ts.on && ts.offsetOnce.CompareAndSwap(false, true) {
		ts.offset.Store(int64(now.Sub(ts.from)))
	}
}

var (
	rfc3339Re = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}(?::|%3A)\d{2}(?::|%3A)\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}(?::|%3A)\d{2})`)
	unixRe    = regexp.MustCompile(`\b\d{10}(?:\d{3})?\b`)
)

// apply moves req's timestamps within the span.
func (ts *timeShift) apply(req *staged) {
	if ts == nil || !ts.on || !ts.offsetOnce.Load() {
		return
	}
	off := time.Duration(ts.offset.Load())
	if q := req.url.RawQuery; q != "" {
		if nq := ts.replace(q, off); nq != q {
			nu := *req.url
			nu.RawQuery = nq
			req.url = &nu
		}
	}
	if len(req.body) > 0 {
		if nb := ts.replace(string(req.body), off); nb != string(req.body) {
			req.body = []byte(nb)
		}
	}
	var h http.Header // cloned on the first change: the template's is shared
	for k, vs := range req.header {
		for i, v := range vs {
			if nv := ts.replace(v, off); nv != v {
				if h == nil {
					h = req.header.Clone()
				}
				h[k][i] = nv
			}
		}
	}
	if h != nil {
		req.header = h
	}
}

// replace shifts every timestamp of s within the span by off.
func (ts *timeShift) replace(s string, off time.Duration) string {
	s = rfc3339Re.ReplaceAllStringFunc(s, func(m string) string {
		esc := strings.Contains(m, "%3A")
		t, err := time.Parse(time.RFC3339Nano, strings.ReplaceAll(m, "%3A", ":"))
		if err != nil || !ts.within(t) {
			return m
		}
		zone := "Z07:00"
		if !strings.HasSuffix(m, "Z") {
			zone = "-07:00" // "+00:00" stays so
		}
		layout := "2006-01-02T15:04:05" + zone
		if i := strings.IndexByte(m, '.'); i >= 0 {
			frac := 0
			for j := i + 1; j < len(m) && m[j] >= '0' && m[j] <= '9'; j++ {
				frac++
			}
			layout = "2006-01-02T15:04:05." + strings.Repeat("0", frac) + zone
		}
		out := t.Add(off).In(t.Location()).Format(layout)
		ts.shifted.Add(1)
		if esc {
			out = strings.ReplaceAll(out, ":", "%3A")
		}
		return out
	})
	return unixRe.ReplaceAllStringFunc(s, func(m string) string {
		n, _ := strconv.ParseInt(m, 10, 64)
		t := time.Unix(n, 0)
		if len(m) == 13 {
			t = time.UnixMilli(n)
		}
		if !ts.within(t) {
			return m
		}
		ts.shifted.Add(1)
		if len(m) == 13 {
			return strconv.FormatInt(t.Add(off).UnixMilli(), 10)
		}
		return strconv.FormatInt(t.Add(off).Unix(), 10)
	})
}

func (ts *timeShift) within(t time.Time) bool {
	return !t.Before(ts.from.Add(-time.Second)) && !t.After(ts.to.Add(time.Second))
}
