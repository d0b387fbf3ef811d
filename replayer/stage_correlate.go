package replayer

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replaykit/replay/snapshots"
)

// pending is what a request took from earlier answers: per use, whether
// the live value was found, for the report and for explaining a 404.
type pending struct {
	uses     []use
	resolved []bool
}

// correlate waits for the answers req takes values from and substitutes
// the live values into req; it returns what it did.
func (s *stage) correlate(ctx context.Context, key int64, pos int, req *staged) *pending {
	if pos < 0 {
		return nil
	}
	uses := s.links.uses[pos]
	if len(uses) == 0 {
		return nil
	}
	p := &pending{uses: uses, resolved: make([]bool, len(uses))}
	waited, t0 := false, time.Now()
	cookies := map[string]string{}
	for i, u := range uses {
		st := s.links.links[u.link]
		st.requests.Add(1)
		var a *answer
		var w bool
		why := "not replayed"
		srcKey := key - int64(pos-u.src)
		if sh := s.r.cfg.Shard; key < 0 {
			a = s.live.last(u.src, s.r.seq.endpoint(u.src)) // outside the sequence: the last one will do
		} else if !sh.sharded() || s.links.shardOf(srcKey, s.r.seq.len(), sh.N) == sh.K {
			a, w, why = s.live.get(ctx, srcKey, s.r.timeout)
		} else {
			why = "sent by another shard"
		}
		if a == nil && why == "not replayed" {
			a = s.live.last(u.src, s.r.seq.endpoint(u.src))
		}
		waited = waited || w
		if a == nil {
			st.why.set(whyMissing(u, why))
			continue
		}
		if u.from.kind == locSetCookie {
			p.resolved[i] = s.takeCookies(a, u, cookies)
		} else if keepRecorded(a, u) {
			p.resolved[i] = true
		} else if v, ok := a.values[u.from]; ok {
			p.resolved[i] = substitute(req, u, v)
		}
		if p.resolved[i] {
			st.resolved.Add(1)
		} else {
			st.why.set(whyAnswer(u, a))
		}
	}
	if waited {
		s.waitedFor(time.Since(t0))
	}
	if len(cookies) > 0 {
		setCookies(req, cookies)
	}
	return p
}

func whyMissing(u use, why string) string {
	return "the answer it comes from was " + why
}

func whyAnswer(u use, a *answer) string {
	if a.status < 200 || a.status >= 400 {
		return "its source was answered " + strconv.Itoa(a.status)
	}
	return "the replayed answer had no " + u.from.String()
}

// takeCookies puts the cookies a's answer set (the one u names, or all)
// in cookies.
func (s *stage) takeCookies(a *answer, u use, cookies map[string]string) bool {
	found := false
	for name, v := range a.cookies {
		if u.from.name == "" || u.from.name == name {
			cookies[name] = v
			found = true
		}
	}
	return found
}

// answered keeps what the dependents of the source at pos take from its
// live answer.
func (s *stage) answered(key int64, pos int, ans liveAnswer) {
	a := &answer{status: ans.status, values: map[loc]string{}, cookies: map[string]string{}}
	for _, sc := range ans.header.Values("Set-Cookie") {
		if c, err := http.ParseSetCookie(sc); err == nil {
			a.cookies[c.Name] = c.Value
		}
	}
	var doc any
	parsed := false
	for _, at := range s.links.sources[pos] {
		switch at.kind {
		case locJSON:
			if !parsed {
				parsed = true
				body := ans.body
				if enc := ans.header.Get("Content-Encoding"); enc != "" {
					if b, _, ok := decode(strings.ToLower(enc), body, maxSourceBody); ok {
						body = b
					}
				}
				dec := json.NewDecoder(strings.NewReader(string(body)))
				dec.UseNumber()
				if dec.Decode(&doc) != nil {
					doc = nil
				}
			}
			if v, ok := jsonAt(doc, at.name); ok {
				a.values[at] = v
			}
			if strings.Contains(at.name, "[") {
				if a.held == nil {
					a.held = map[string]bool{}
				}
				jsonAnyOf(doc, at.name, func(v string) bool { a.held[v] = true; return true })
			}
		case locLocation:
			if v, ok := locationSegment(ans.header.Get("Location"), at.name); ok {
				a.values[at] = v
			}
		}
	}
	s.live.put(key, pos, s.r.seq.endpoint(pos), a)
}

// settle counts a request answered 404 whose values were not all
// resolved: the link that was missing.
func (s *stage) settle(pos int, res *snapshots.Result, p *pending) {
	if p == nil || res.Status != http.StatusNotFound {
		return
	}
	for i, ok := range p.resolved {
		if !ok {
			s.links.links[p.uses[i].link].notFound.Add(1)
		}
	}
}

// posOf is the position of the recorded exchange id in the pass; -1 when
// it is not replayed.
func (s *stage) posOf(id int64) int {
	s.posOnce.Do(func() {
		s.pos = make(map[int64]int, s.r.seq.len())
		for i := range s.r.seq.len() {
			s.pos[s.r.seq.id(i)] = i
		}
	})
	if p, ok := s.pos[id]; ok {
		return p
	}
	return -1
}

// own is the first sequence position at or after g that is the shard's.
// With links, a request goes to the shard of its group's first request,
// so that a dependent request and its source are sent by one process.
func (r *Replayer) own(g int64) int64 {
	sh := r.cfg.Shard
	if r.stage == nil || r.stage.links == nil || !sh.sharded() {
		return sh.own(g)
	}
	n := int64(r.seq.len())
	for c := g; c < g+2*n+int64(sh.N); c++ {
		if r.stage.links.shardOf(c, int(n), sh.N) == sh.K {
			return c
		}
	}
	return sh.own(g) // fewer groups than shards
}

// posIndex is the stage's map from exchange id to position (posOf).
type posIndex struct {
	posOnce sync.Once
	pos     map[int64]int
}

// substitute puts the live value v where u says in req; false when the
// recorded value is not there.
func substitute(req *staged, u use, v string) bool {
	old := u.value
	switch u.to.kind {
	case locPath:
		segs := strings.Split(req.url.EscapedPath(), "/")
		found := false
		for i, seg := range segs {
			if seg == url.PathEscape(old) {
				segs[i], found = url.PathEscape(v), true
			}
		}
		if found {
			nu := *req.url
			nu.RawPath = strings.Join(segs, "/")
			nu.Path, _ = url.PathUnescape(nu.RawPath)
			req.url = &nu
		}
		return found
	case locQuery:
		q := req.url.RawQuery
		from, to := url.QueryEscape(u.to.name)+"="+url.QueryEscape(old), url.QueryEscape(u.to.name)+"="+url.QueryEscape(v)
		if !strings.Contains(q, from) {
			return false
		}
		nu := *req.url
		nu.RawQuery = strings.ReplaceAll(q, from, to)
		req.url = &nu
		return true
	case locHeader:
		vs := req.header.Values(u.to.name)
		if len(vs) == 0 {
			return false
		}
		h := req.header.Clone()
		h.Del(u.to.name)
		for _, x := range vs {
			h.Add(u.to.name, strings.ReplaceAll(x, old, v))
		}
		req.header = h
		return true
	case locBody:
		if !strings.Contains(string(req.body), old) {
			return false
		}
		req.body = []byte(strings.ReplaceAll(string(req.body), old, v))
		return true
	}
	return false
}

// setCookies replaces the Cookie header's values of the cookies given.
func setCookies(req *staged, cookies map[string]string) {
	h := req.header.Clone()
	var parts []string
	for _, c := range parseCookies(strings.Join(h.Values("Cookie"), "; ")) {
		if _, ok := cookies[c[0]]; !ok {
			parts = append(parts, c[0]+"="+c[1])
		}
	}
	for name, v := range cookies {
		parts = append(parts, name+"="+v)
	}
	h.Set("Cookie", strings.Join(parts, "; "))
	req.header = h
}

// locationSegment is the path segment of a Location value at index i
// (as text).
func locationSegment(l, i string) (string, bool) {
	u, err := url.Parse(l)
	if err != nil {
		return "", false
	}
	segs := strings.Split(u.Path, "/")
	k, err := strconv.Atoi(i)
	if err != nil || k < 0 || k >= len(segs) {
		return "", false
	}
	return segs[k], true
}

// keepRecorded reports whether u's recorded value is still in its source's
// live answer, in the array the link's path goes through: an element of a
// list the server returns in another order (or grown) is still valid, and
// taking the one at the recorded index would send another. A value the
// server generated anew is not there, and is substituted.
func keepRecorded(a *answer, u use) bool {
	return u.from.kind == locJSON && u.value != "" && a.held[u.value]
}
