package sqlcore

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// ClientStats are the totals of the client connections that gave one
// program name at startup.
type ClientStats struct {
	// App is the program's name: PostgreSQL's application_name (PGAPPNAME,
	// or the connection string's application_name), MySQL's program_name
	// connection attribute; "" for none.
	App string
	// Connections counts the connections; Statements the statements
	// completed on them.
	Connections, Statements int64
}

// clients counts connections and statements per application_name, so a
// caller can tell which builds used the proxy.
type clients struct {
	mu     sync.Mutex
	byName map[string]*clientCount
}

type clientCount struct {
	app         string
	connections atomic.Int64
	statements  atomic.Int64
}

// get returns the counts of app, made on first use.
func (c *clients) get(app string) *clientCount {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byName == nil {
		c.byName = map[string]*clientCount{}
	}
	n, ok := c.byName[app]
	if !ok {
		n = &clientCount{app: app}
		c.byName[app] = n
	}
	return n
}

// all returns the totals by application_name.
func (c *clients) all() []ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]ClientStats, 0, len(c.byName))
	for _, n := range c.byName {
		out = append(out, ClientStats{App: n.app, Connections: n.connections.Load(), Statements: n.statements.Load()})
	}
	slices.SortFunc(out, func(a, b ClientStats) int { return cmp.Compare(a.App, b.App) })
	return out
}
