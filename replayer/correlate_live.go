package replayer

import (
	"context"
	"sync"
	"time"
)

// answer is what the stage keeps of a replayed answer that later requests
// take values from.
type answer struct {
	status  int
	values  map[loc]string    // at the source's locations (locJSON, locLocation)
	held    map[string]bool   // every value of the arrays those locations go through (see keepRecorded)
	cookies map[string]string // the cookies it set, by name
}

// liveAnswers holds the replayed answers of sources, by key (pass ×
// requests + position), until their dependents have taken their values.
type liveAnswers struct {
	mu    sync.Mutex
	first int64 // the first key of the replayer's first load call; -1: none yet
	done  map[int64]*answer
	waits map[int64]chan struct{}
	order []int64 // keys in the order they were put, for pruning
	keep  int     // most answers kept
	// latest is the last answer put of each source position, for requests
	// outside the sequence (the explain phase) and sources not replayed.
	latest map[int]*answer
	// byEndpoint is the last answer put of each source endpoint, when the
	// source's own is not there.
	byEndpoint map[string]*answer
}

func (l *liveAnswers) init() {
	l.first, l.done, l.waits, l.keep = -1, map[int64]*answer{}, map[int64]chan struct{}{}, 4096
	l.latest, l.byEndpoint = map[int]*answer{}, map[string]*answer{}
}

func (l *liveAnswers) start(cursor int64) {
	l.mu.Lock()
	if l.first < 0 {
		l.first = cursor
	}
	l.mu.Unlock()
}

// get returns the answer of the source at key, waiting for it up to
// timeout; nil with the reason when there is none.
func (l *liveAnswers) get(ctx context.Context, key int64, timeout time.Duration) (a *answer, waited bool, why string) {
	l.mu.Lock()
	if a := l.done[key]; a != nil {
		l.mu.Unlock()
		return a, false, ""
	}
	if l.first < 0 || key < l.first {
		l.mu.Unlock()
		return nil, false, "not replayed"
	}
	ch := l.waits[key]
	if ch == nil {
		ch = make(chan struct{})
		l.waits[key] = ch
	}
	l.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, true, "canceled"
	case <-t.C:
		return nil, true, "no answer within " + timeout.String()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done[key], true, ""
}

// last returns the last answer put of the source at pos, else of its
// endpoint ep; nil when none.
func (l *liveAnswers) last(pos int, ep string) *answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if a := l.latest[pos]; a != nil {
		return a
	}
	return l.byEndpoint[ep]
}

// put keeps the answer of the source at pos, sent as key (negative:
// outside the sequence), and wakes its dependents.
func (l *liveAnswers) put(key int64, pos int, ep string, a *answer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latest[pos] = a
	if a.status >= 200 && a.status < 400 {
		l.byEndpoint[ep] = a
	}
	if key < 0 {
		return
	}
	l.done[key] = a
	if ch := l.waits[key]; ch != nil {
		close(ch)
		delete(l.waits, key)
	}
	l.order = append(l.order, key)
	for len(l.order) > l.keep {
		delete(l.done, l.order[0])
		l.order = l.order[1:]
	}
}
