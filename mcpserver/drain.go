package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// drain holds back the end of a client's input until every call it sent
// has its answer written: a client that pipes its calls and closes stdin
// (`printf … | replay mcp`) gets every answer, not only those of the calls
// that ended before the SDK saw the end of its input and cancelled the
// rest. It watches the newline-delimited JSON-RPC messages both ways: a
// request with an id read from the client is a call in flight until a
// response with that id is written. Closing it (the server stops) ends
// the wait.
type drain struct {
	mu      sync.Mutex
	pending map[string]bool // ids of the calls in flight, as idKey gives them
	in, out []byte          // the partial lines read and written

	changed   chan struct{} // a call was answered
	closed    chan struct{}
	closeOnce sync.Once
}

func newDrain() *drain {
	return &drain{pending: map[string]bool{}, changed: make(chan struct{}, 1), closed: make(chan struct{})}
}

// reader is r, whose io.EOF waits for the calls in flight.
func (d *drain) reader(r io.ReadCloser) io.ReadCloser { return drainReader{d, r} }

// writer is w, through which the server's answers are seen.
func (d *drain) writer(w io.WriteCloser) io.WriteCloser { return drainWriter{d, w} }

type drainReader struct {
	d *drain
	r io.ReadCloser
}

func (r drainReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.d.mu.Lock()
	r.d.in = r.d.lines(r.d.in, p[:n], r.d.called)
	r.d.mu.Unlock()
	if err == io.EOF && n > 0 {
		return n, nil // the calls in these bytes are not dispatched yet: EOF next time
	}
	if err == io.EOF {
		r.d.wait()
	}
	return n, err
}

func (r drainReader) Close() error {
	r.d.closeOnce.Do(func() { close(r.d.closed) })
	return r.r.Close()
}

type drainWriter struct {
	d *drain
	w io.WriteCloser
}

func (w drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.d.mu.Lock()
	w.d.out = w.d.lines(w.d.out, p[:n], w.d.answered)
	w.d.mu.Unlock()
	return n, err
}

func (w drainWriter) Close() error { return w.w.Close() }

// wait returns once no call is in flight or d is closed.
func (d *drain) wait() {
	for {
		d.mu.Lock()
		n := len(d.pending)
		d.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-d.changed:
		case <-d.closed:
			return
		}
	}
}

// lines appends p to the partial line buf, hands each whole line's
// messages to seen and returns what is left. The caller holds d.mu.
func (d *drain) lines(buf, p []byte, seen func(message)) []byte {
	buf = append(buf, p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		for _, m := range decodeMessages(buf[:i]) {
			seen(m)
		}
		buf = buf[i+1:]
	}
	if len(buf) == 0 {
		return nil // let go of a big line's array
	}
	return buf
}

// called notes a call read from the client.
func (d *drain) called(m message) {
	if m.Method != "" && m.ID != nil {
		d.pending[idKey(m.ID)] = true
	}
}

// answered notes a response written to the client.
func (d *drain) answered(m message) {
	if m.Method != "" || m.ID == nil {
		return // the server's own request or notification
	}
	delete(d.pending, idKey(m.ID))
	select {
	case d.changed <- struct{}{}:
	default:
	}
}

// message is what drain reads of a JSON-RPC message.
type message struct {
	ID     any    `json:"id"`
	Method string `json:"method"`
}

// decodeMessages decodes a line: one message or a batch; nothing when it
// is neither (the SDK answers that).
func decodeMessages(line []byte) []message {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var ms []message
		json.Unmarshal(line, &ms) // a bad batch: the SDK says so
		return ms
	}
	var m message
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []message{m}
}

// idKey is a call's id as a map key: 1 and 1.0 are the same id, "1" is
// another.
func idKey(id any) string { return fmt.Sprintf("%T:%v", id, id) }
