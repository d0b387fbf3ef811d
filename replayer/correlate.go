package replayer

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/replaykit/replay/snapshots"
)

// Correlation: a value the server generated in one answer (a JSON field, a
// Location header, Set-Cookie) that the same client sent back later (a
// path segment, a query value, a header, a cookie, a JSON field) links the
// later request to the earlier. The links are found from the recording
// alone, before the load (this file); the stage substitutes the live value
// from the replayed answer just before the later request is sent
// (stage.go).

// locKind says where a value sits in a request or an answer.
type locKind uint8

const (
	locPath      locKind = iota // a path segment of the request
	locQuery                    // a query value (name: the key)
	locHeader                   // a request header (name)
	locCookie                   // a cookie sent (name; "": the whole Cookie header)
	locBody                     // a JSON field of the request body (name: its path)
	locJSON                     // a JSON field of the answer (name: its path)
	locLocation                 // a path segment or query value of the answer's Location
	locSetCookie                // a cookie the answer set (name; "": every one)
)

// loc is where a value sits.
type loc struct {
	kind locKind
	name string
}

func (l loc) String() string {
	switch l.kind {
	case locPath:
		return "path"
	case locQuery:
		return "query " + l.name
	case locHeader:
		return "header " + l.name
	case locCookie:
		if l.name == "" {
			return "cookies"
		}
		return "cookie " + l.name
	case locBody:
		return "body " + l.name
	case locJSON:
		return l.name
	case locLocation:
		return "Location"
	case locSetCookie:
		if l.name == "" {
			return "Set-Cookie"
		}
		return "Set-Cookie " + l.name
	}
	return "?"
}

// use is one value a request takes from an earlier answer.
type use struct {
	src   int    // the source's position in the pass
	from  loc    // where in the source's answer
	to    loc    // where in this request
	value string // as recorded ("" for cookies: the jar's)
	link  int    // index in linkSet.links
}

// linkSet is the links of one pass of the request sequence.
type linkSet struct {
	uses    map[int][]use  // by dependent position
	sources map[int][]loc  // by source position: what to keep of its answer
	group   []int32        // position → the rank of its group (by first position)
	groups  int64          // the number of groups in a pass
	links   []*linkStat    // for the report, in order of discovery
	byName  map[string]int // "from\x00to" → index in links
}

// linkStat counts the uses of one link (source field of an endpoint →
// place in another endpoint's requests) during the load.
type linkStat struct {
	from, to  string
	requests  atomicCount
	resolved  atomicCount
	notFound  atomicCount // answered 404 while unresolved
	why       whyNote
	recording int // times the recording uses it in a pass
}

// generated is a value an answer holds, at pos.
type generated struct {
	pos int
	at  loc
}

// client is what the detector knows of one recorded client.
type client struct {
	gen     map[string]generated // value → its first answer
	sent    map[string]bool      // values the client sent before any answer held them
	cookies map[string]int       // cookie name ("" for a redacted Set-Cookie) → latest answer setting it
}

// linkDetector finds the links of a pass, exchange by exchange in order.
//
// A client is the requests of one --session-key value when one is given,
// else of one recorded connection (Exchange.ClientConn), else the whole
// recording. With a session key a value comes from its client's answers
// only. Without one, a value is looked for in its connection's answers
// first; one they never held may come from another connection's (a client
// on several connections, a resource one client created and another
// reads), and a cookie no answer on the connection set, from the latest
// any answer set.
type linkDetector struct {
	sessionKey string
	clients    map[string]*client
	all        *client // every client's values and cookies
	set        *linkSet
	parent     map[int]int    // union-find over positions
	endpoints  map[int]string // of the positions whose answers hold values
	values     int            // generated values held, at most maxGenerated
}

// Bounds on what correlation holds in memory for a big recording: the
// values answers generated (the first ones), and the requests linked.
const (
	maxGenerated = 1 << 20
	maxLinked    = 1 << 20
)

func newLinkDetector(sessionKey string) *linkDetector {
	return &linkDetector{sessionKey: http.CanonicalHeaderKey(sessionKey), clients: map[string]*client{}, all: newClient(),
		set:    &linkSet{uses: map[int][]use{}, sources: map[int][]loc{}, byName: map[string]int{}},
		parent: map[int]int{}, endpoints: map[int]string{}}
}

func newClient() *client {
	return &client{gen: map[string]generated{}, sent: map[string]bool{}, cookies: map[string]int{}}
}

// clientKey names the recorded client e is a request of.
func (d *linkDetector) clientKey(e *snapshots.Exchange) string {
	switch {
	case d.sessionKey != "":
		return "k" + e.RequestHeader.Get(d.sessionKey)
	case e.ClientConn != 0:
		return "c" + strconv.FormatInt(e.ClientConn, 10)
	}
	return ""
}

// add takes the exchange at position pos (its request and its answer).
func (d *linkDetector) add(pos int, e *snapshots.Exchange) {
	key := d.clientKey(e)
	c := d.clients[key]
	if c == nil {
		c = newClient()
		d.clients[key] = c
	}
	ep := templateEndpoint(e)
	requestValues(e, func(v string, to loc) {
		if to.kind == locCookie {
			d.cookieUse(pos, ep, c, to, v)
			return
		}
		g, ok := c.gen[v]
		if !ok && !c.sent[v] && d.sessionKey == "" {
			g, ok = d.all.gen[v] // another connection's
		}
		if !ok {
			c.sent[v] = true
			return
		}
		d.link(pos, ep, g.pos, g.at, to, v)
	})
	answerValues(e, func(v string, at loc) {
		d.endpoints[pos] = ep
		if at.kind == locSetCookie {
			c.cookies[at.name] = pos
			d.all.cookies[at.name] = pos
			return
		}
		if _, ok := c.gen[v]; !ok && !c.sent[v] {
			if d.values < maxGenerated {
				d.values++
				c.gen[v] = generated{pos: pos, at: at}
				if _, ok := d.all.gen[v]; !ok {
					d.all.gen[v] = c.gen[v]
				}
			}
		}
	})
}

// cookieUse links a cookie sent to the latest answer that set it: by name,
// or every cookie set when either side was redacted.
func (d *linkDetector) cookieUse(pos int, ep string, c *client, to loc, v string) {
	if len(c.cookies) == 0 && d.sessionKey == "" {
		c = d.all // no answer on this connection set one
	}
	if to.name != "" {
		if src, ok := c.cookies[to.name]; ok {
			d.link(pos, ep, src, loc{locSetCookie, to.name}, to, "")
			return
		}
	}
	if src, ok := c.cookies[""]; ok {
		d.link(pos, ep, src, loc{locSetCookie, ""}, loc{locCookie, ""}, "")
		return
	}
	if to.name == "" {
		for name, src := range c.cookies {
			d.link(pos, ep, src, loc{locSetCookie, name}, loc{locCookie, name}, "")
		}
	}
}

// link notes that the request at pos takes value from src's answer.
func (d *linkDetector) link(pos int, ep string, src int, from, to loc, value string) {
	s := d.set
	if _, ok := s.uses[pos]; !ok && len(s.uses) >= maxLinked {
		return
	}
	for _, u := range s.uses[pos] {
		if u.src == src && u.from == from && u.to == to {
			return
		}
	}
	name := from.String() + " of " + d.endpoints[src] + "\x00" + to.String() + " of " + ep
	i, ok := s.byName[name]
	if !ok {
		f, t, _ := strings.Cut(name, "\x00")
		i = len(s.links)
		s.byName[name] = i
		s.links = append(s.links, &linkStat{from: f, to: t})
	}
	s.links[i].recording++
	s.uses[pos] = append(s.uses[pos], use{src: src, from: from, to: to, value: value, link: i})
	known := false
	for _, l := range s.sources[src] {
		known = known || l == from
	}
	if !known {
		s.sources[src] = append(s.sources[src], from)
	}
	d.union(pos, src)
}

func (d *linkDetector) find(p int) int {
	for {
		q, ok := d.parent[p]
		if !ok || q == p {
			return p
		}
		if r, ok := d.parent[q]; ok {
			d.parent[p] = r
		}
		p = q
	}
}

// union puts a and b in one group, rooted at its first position.
func (d *linkDetector) union(a, b int) {
	ra, rb := d.find(a), d.find(b)
	if ra == rb {
		return
	}
	if rb < ra {
		ra, rb = rb, ra
	}
	d.parent[rb] = ra
	d.parent[ra] = ra
}

// done returns the links found in a pass of n requests; nil when there
// are none. Requests linked together form a group; every other request is
// a group of its own.
func (d *linkDetector) done(n int) *linkSet {
	if len(d.set.uses) == 0 {
		return nil
	}
	s := d.set
	s.group = make([]int32, n)
	for p := range n {
		if r := d.find(p); r != p {
			s.group[p] = s.group[r] // the root comes first
			continue
		}
		s.group[p] = int32(s.groups)
		s.groups++
	}
	return s
}

// shardOf is the shard, of n, of the request at key (pass × requests +
// position) of a pass of len requests: its group's, the groups of the
// successive passes dealt in turn.
func (s *linkSet) shardOf(key int64, len, n int) int {
	pass, pos := key/int64(len), int(key%int64(len))
	return int((pass*s.groups + int64(s.group[pos])) % int64(n))
}
