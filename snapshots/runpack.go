package snapshots

import (
	"fmt"
	"slices"
)

// Pack is Add packing r at once, on the caller's goroutine, while r is in
// its cache: it keeps nothing of r, so the caller may reuse it (a load
// generator's event loop, replayer.ResultCopier). It costs the caller the
// packing (a few hundred nanoseconds) that Add leaves to the writer.
func (w *RunWriter) Pack(r *Result) {
	// Numbering, packing and queueing under the batcher's lock queues the
	// records in the order of Seq (a result numbered before the last block
	// written costs a block of its own), and a string's row before the
	// records that name it.
	w.b.addFunc(func() runRecord {
		w.number(r)
		if cap(w.arena)-len(w.arena) < arenaLeft {
			w.arena = make([]byte, 0, arenaChunk)
		}
		at := len(w.arena)
		w.arena = w.enc.append(w.arena, r)
		rr := runRecord{seq: r.Seq, rec: w.arena[at:len(w.arena):len(w.arena)]}
		if len(w.enc.newStrs) > 0 {
			rr.strs = slices.Clone(w.enc.newStrs)
			w.enc.newStrs = w.enc.newStrs[:0]
		}
		return rr
	})
}

// Pack's records are packed into chunks of arenaChunk bytes, a new one when
// less than arenaLeft is left (a longer record grows the chunk); a chunk
// lives as long as one of its records waits.
const (
	arenaChunk = 64 << 10
	arenaLeft  = 512
)

// number assigns r.Seq when zero.
func (w *RunWriter) number(r *Result) {
	if r.Seq == 0 {
		r.Seq = w.lastSeq.Add(1)
	} else {
		atomicMax(&w.lastSeq, r.Seq)
	}
}

// heldResult is a result of the open transaction: its record.
type heldResult struct {
	seq int64
	rec []byte
}

// hold packs chunk's results from Add and keeps the records until the
// transaction ends (sorting all its results then puts more of them in
// order), storing the rows of the strings they interned.
func (w *RunWriter) hold(st *stmts, chunk []runRecord) {
	// The encoder is Pack's too: Add's results are packed under the
	// batcher's lock, taken once for the chunk (a producer waits for a
	// chunk's packing at most), and the rows of the strings they intern
	// stored before any record that names them (Pack's are queued after
	// the lock is let go).
	locked := false
	for _, r := range chunk {
		switch {
		case r.rsp != nil:
			w.heldRsp = append(w.heldRsp, r.rsp)
		case r.res != nil:
			if !locked {
				w.b.mu.Lock()
				locked = true
			}
			at := len(w.heldBuf)
			w.heldBuf = w.enc.append(w.heldBuf, r.res)
			w.held = append(w.held, heldResult{r.seq, w.heldBuf[at:len(w.heldBuf):len(w.heldBuf)]})
		default:
			for _, s := range r.strs {
				w.storeStr(st, s)
			}
			w.held = append(w.held, heldResult{r.seq, r.rec})
		}
	}
	if locked {
		strs := w.enc.newStrs
		w.enc.newStrs = nil
		w.b.mu.Unlock()
		for _, s := range strs {
			w.storeStr(st, s)
		}
	}
}

// storeStr stores s in the strings table; it is stored again in the next
// transaction when this one fails.
func (w *RunWriter) storeStr(st *stmts, s internedStr) {
	w.txStrs = append(w.txStrs, s)
	if err := st.exec("string", s.id, s.s); err != nil {
		w.b.fail(fmt.Errorf("string %d: %w", s.id, err))
	}
}

// committed ends a transaction: when it failed, its strings are stored
// again in the next (the records written later name them).
func (w *RunWriter) committed(err error) {
	if err != nil {
		w.unsaved = append(w.unsaved, w.txStrs...)
	}
	w.txStrs = w.txStrs[:0]
}
