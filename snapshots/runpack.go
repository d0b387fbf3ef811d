package snapshots

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// Pack is Add packing r at once, on the caller's goroutine, while r is in
// its cache: it keeps nothing of r, so the caller may reuse it (a load
// generator's event loop, replayer.ResultCopier). It costs the caller the
// packing (a few hundred nanoseconds) that Add leaves to the writer.
func (w *RunWriter) Pack(r *Result) {
	// Most records are packed before any lock is taken, with the ids
	// published, but for their flags and Seq. Numbering under the
	// batcher's lock queues them in order of Seq (a result numbered before
	// the last block written costs a block of its own).
	var buf [256]byte
	pk := recordPacker{enc: &w.enc}
	body, flags := pk.body(buf[:recordHead], r)
	if !pk.missed {
		rec := slices.Clone(body)
		w.b.addFunc(func() runRecord {
			w.number(r)
			head := binary.AppendVarint(append(buf[:0], flags), r.Seq)
			at := recordHead - len(head)
			copy(rec[at:], head)
			return runRecord{seq: r.Seq, rec: rec[at:]}
		}, true)
		return
	}
	// A string without a published id: pack under the encoder's lock,
	// which interns it, queue its row before the record, and publish its
	// id only then (the records that name a string come after its row).
	// Room is waited for first, and the record queued without waiting
	// then (the writer may need encMu to make room).
	w.b.waitRoom()
	w.encMu.Lock()
	defer w.encMu.Unlock()
	w.b.addFunc(func() runRecord {
		w.number(r)
		rr := runRecord{seq: r.Seq, rec: w.enc.append(nil, r)}
		if len(w.enc.newStrs) > 0 {
			rr.strs = slices.Clone(w.enc.newStrs)
			w.enc.newStrs = w.enc.newStrs[:0]
		}
		return rr
	}, false)
	w.enc.in.publish()
}

// number assigns r.Seq when zero.
func (w *RunWriter) number(r *Result) {
	if r.Seq == 0 {
		r.Seq = w.lastSeq.Add(1)
	} else {
		atomicMax(&w.lastSeq, r.Seq)
	}
}

// runWakeAfter is how many waiting records wake a run writer (batcher's
// wakeAfter): each wake-up costs a futex call or two and the scheduler's
// spinning (at 100,000 results a second, 400 a second at 256), and a
// writer has little to do before the commit (Pack's records come packed;
// Add's it packs as well then as earlier).
const runWakeAfter = 4096

// recordHead is the room left before a record's body for its flags and
// Seq (a byte and at most ten).
const recordHead = 11

// heldResult is a result of the open transaction: its record.
type heldResult struct {
	seq int64
	rec []byte
}

// hold packs Add's results of chunk and stores the strings Pack's interned,
// and keeps the records until the transaction ends: sorting all its
// results then puts more of them in order.
func (w *RunWriter) hold(st *stmts, chunk []runRecord) {
	locked := false
	for _, r := range chunk {
		switch {
		case r.rsp != nil:
			w.heldRsp = append(w.heldRsp, r.rsp)
		case r.res != nil:
			if !locked {
				w.encMu.Lock()
				locked = true
			}
			at := len(w.heldBuf)
			w.heldBuf = w.enc.append(w.heldBuf, r.res)
			for _, s := range w.enc.newStrs {
				w.storeStr(st, s)
			}
			w.enc.newStrs = w.enc.newStrs[:0]
			w.held = append(w.held, heldResult{r.seq, w.heldBuf[at:len(w.heldBuf):len(w.heldBuf)]})
		default:
			for _, s := range r.strs {
				w.storeStr(st, s)
			}
			w.held = append(w.held, heldResult{r.seq, r.rec})
		}
	}
	if locked {
		w.enc.in.publish() // their rows are in this transaction, before any record that names them
		w.encMu.Unlock()
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
