package mcpserver

import (
	"io"
	"strings"
	"testing"
	"time"
)

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

// TestDrainWaitsForAnswers: the end of the input waits until each call read
// has its response written (1.0 and 1 are one id), or until the drain is
// closed.
func TestDrainWaitsForAnswers(t *testing.T) {
	for _, closeIt := range []bool{false, true} {
		d := newDrain()
		r := d.reader(nopReadCloser{strings.NewReader(`{"jsonrpc":"2.0","id":1.0,"method":"tools/call"}` + "\n" +
			`[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]` + "\n")})
		if n, err := r.Read(make([]byte, 4096)); n == 0 || err != nil {
			t.Fatalf("Read: %d, %v", n, err)
		}
		eof := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(r)
			eof <- err
		}()
		w := d.writer(nopCloser{io.Discard})
		w.Write([]byte(`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage"}` + "\n"))
		select {
		case <-eof:
			t.Fatal("input ended with call 1 unanswered")
		case <-time.After(50 * time.Millisecond):
		}
		if closeIt {
			r.Close()
		} else {
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
		}
		select {
		case err := <-eof:
			if err != nil {
				t.Errorf("ReadAll: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("close %v: input still held back", closeIt)
		}
	}
}
