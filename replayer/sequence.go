package replayer

import (
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/replaykit/replay/internal/batchcache"
)

// requestSeq is one pass of the recorded requests a Replayer sends, by
// position: templates in memory (Config.Exchanges) or read from a Source.
type requestSeq interface {
	len() int
	// at returns the template at position i; one that could not be read
	// carries its error (template.readErr).
	at(i int) *template
	id(i int) int64
	endpoint(i int) string
	start(i int) time.Time
	// firsts returns the first position of every endpoint, in order.
	firsts() []int
}

// sliceSeq is a pass held in memory.
type sliceSeq []*template

func (s sliceSeq) len() int              { return len(s) }
func (s sliceSeq) at(i int) *template    { return s[i] }
func (s sliceSeq) id(i int) int64        { return s[i].id }
func (s sliceSeq) endpoint(i int) string { return s[i].endpoint }
func (s sliceSeq) start(i int) time.Time { return s[i].start }
func (s sliceSeq) firsts() (out []int) {
	seen := map[string]bool{}
	for i, t := range s {
		if !seen[t.endpoint] {
			seen[t.endpoint] = true
			out = append(out, i)
		}
	}
	return out
}

// sourceSeq is a pass read from a Source: this Replayer's templates (its
// target and headers) of the batches around the cursor.
type sourceSeq struct {
	src   *Source
	tmpls *batchcache.Cache[[]*template]
}

func newSourceSeq(src *Source, target *url.URL, header http.Header) *sourceSeq {
	q := &sourceSeq{src: src}
	q.tmpls = batchcache.New(src.batchCount(), SourceWindow, func(b int) ([]*template, error) {
		exs, err := src.batches.Get(b)
		if err != nil {
			return nil, err
		}
		ts := make([]*template, len(exs))
		for i, e := range exs {
			if ts[i], err = newTemplate(e, target, header); err != nil {
				return nil, err
			}
		}
		return ts, nil
	})
	return q
}

func (q *sourceSeq) len() int { return q.src.ids.Len() }

func (q *sourceSeq) at(i int) *template {
	b := i / SourceBatch
	ts, err := q.tmpls.Get(b)
	if err != nil {
		return &template{id: q.src.ids.At(i), endpoint: q.endpoint(i), method: http.MethodGet, readErr: err}
	}
	return ts[i-b*SourceBatch]
}

func (q *sourceSeq) id(i int) int64        { return q.src.ids.At(i) }
func (q *sourceSeq) endpoint(i int) string { return q.src.names[q.src.eps[i]] }
func (q *sourceSeq) firsts() []int         { return slices.Clone(q.src.first) }

// start returns the recorded start of position i; zero when none was
// recorded or the starts could not be read (the as-recorded model then
// says it needs them).
func (q *sourceSeq) start(i int) time.Time {
	if ns, err := q.src.start(i); err == nil && ns != 0 {
		return time.Unix(0, ns).UTC()
	}
	return time.Time{}
}
