package recorder

import (
	"io"
	"sync"
)

// capture is an io.ReadCloser that passes a body through unchanged while
// keeping its first limit bytes and counting all of them. done is called
// once, when the body hits EOF, fails, or is closed.
type capture struct {
	rc    io.ReadCloser
	limit int64
	buf   []byte
	size  int64
	err   error
	once  sync.Once
	done  func(c *capture)
}

func newCapture(rc io.ReadCloser, limit int64, done func(c *capture)) *capture {
	return &capture{rc: rc, limit: limit, done: done}
}

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.rc.Read(p)
	if n > 0 {
		c.size += int64(n)
		if room := c.limit - int64(len(c.buf)); room > 0 {
			c.buf = append(c.buf, p[:min(int64(n), room)]...)
		}
	}
	if err != nil {
		if err != io.EOF {
			c.err = err
		}
		c.finish()
	}
	return n, err
}

func (c *capture) Close() error {
	err := c.rc.Close()
	c.finish()
	return err
}

func (c *capture) finish() {
	c.once.Do(func() {
		if c.done != nil {
			c.done(c)
		}
	})
}

// Bytes returns the captured prefix of the body.
func (c *capture) Bytes() []byte { return c.buf }

// Size returns the number of body bytes that passed through.
func (c *capture) Size() int64 { return c.size }

// Err returns the read error other than EOF, if any.
func (c *capture) Err() error { return c.err }
