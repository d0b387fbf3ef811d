package tokens

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Fetch gets a new token and when it expires (the zero time: unknown, it
// lives until the target refuses it).
type Fetch func(ctx context.Context) (token string, expiry time.Time, err error)

// Cache keeps a token from Fetch and fetches the next one before the
// current expires: a quarter of its lifetime before (at most 30 s before),
// and hands none out in the last tenth of its lifetime (at least 100 ms,
// at most 5 s), so that no token expires on its way to the target. Requests asking meanwhile get the
// current token; once it has expired they wait for the next one, which one
// fetch serves to all. Safe for concurrent use.
type Cache struct {
	fetch Fetch
	now   func() time.Time

	mu       sync.Mutex
	token    string
	expiry   time.Time     // zero: unknown
	renewAt  time.Time     // zero: never before a refusal
	margin   time.Duration // a token this close to its expiry is not handed out
	fetching chan struct{}
	err      error // of the last fetch, for the callers waiting on it
	fetches  int64
}

// NewCache returns a Cache over fetch.
func NewCache(fetch Fetch) *Cache { return &Cache{fetch: fetch, now: time.Now} }

// maxEarly bounds how long before its expiry a token is renewed.
const maxEarly = 30 * time.Second

// Token returns a token valid now, fetching one when there is none or the
// current one has expired, and starting the fetch of the next one in the
// background when the current one is about to expire.
func (c *Cache) Token(ctx context.Context) (string, error) {
	for {
		c.mu.Lock()
		now := c.now()
		valid := c.token != "" && (c.expiry.IsZero() || now.Before(c.expiry.Add(-c.margin)))
		if valid {
			tok := c.token
			if !c.renewAt.IsZero() && !now.Before(c.renewAt) && c.fetching == nil {
				c.startFetch()
			}
			c.mu.Unlock()
			return tok, nil
		}
		if c.fetching == nil {
			c.startFetch()
		}
		ch := c.fetching
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		c.mu.Lock()
		tok, err := c.token, c.err
		live := tok != "" && (c.expiry.IsZero() || c.now().Before(c.expiry))
		c.mu.Unlock()
		if err != nil && !live {
			return "", err
		}
		if tok != "" {
			return tok, nil // even one already expired: the target says so
		}
	}
}

// startFetch fetches the next token in the background; c.mu is held.
func (c *Cache) startFetch() {
	ch := make(chan struct{})
	c.fetching = ch
	go func() {
		// The fetch outlives any one request: it has its own bound.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		started := c.now()
		tok, exp, err := c.fetch(ctx)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.fetches++
		c.err = err
		if err == nil && tok == "" {
			c.err = errors.New("the token is empty")
		}
		if c.err == nil {
			c.token, c.expiry, c.renewAt = tok, exp, time.Time{}
			if !exp.IsZero() {
				life := exp.Sub(started)
				c.renewAt = exp.Add(-max(min(life/4, maxEarly), 0))
				// No request leaves with a token about to expire on the way.
				c.margin = min(max(life/10, 100*time.Millisecond), 5*time.Second)
			}
		}
		c.fetching = nil
		close(ch)
	}()
}

// Invalidate drops token, which the target refused, so that the next
// Token fetches another; a token already replaced is left alone.
func (c *Cache) Invalidate(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token, c.expiry, c.renewAt = "", time.Time{}, time.Time{}
	}
}

// Fetches returns how many tokens were fetched so far.
func (c *Cache) Fetches() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fetches
}
