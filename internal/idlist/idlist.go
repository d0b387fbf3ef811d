// Package idlist holds long lists of exchange IDs in 4 bytes each (8 once
// one does not fit in 32 bits): the index of a snapshot of millions of
// exchanges that replay keeps in memory.
package idlist

import (
	"math"
	"sort"
)

// List is a list of int64 IDs. The zero value is an empty list.
type List struct {
	small []uint32 // while every ID fits
	big   []int64  // once one does not
}

// Append adds id at the end.
func (l *List) Append(id int64) {
	if l.big == nil && id >= 0 && id <= math.MaxUint32 {
		l.small = append(l.small, uint32(id))
		return
	}
	if l.big == nil {
		l.big = make([]int64, len(l.small), len(l.small)+1)
		for i, v := range l.small {
			l.big[i] = int64(v)
		}
		l.small = nil
	}
	l.big = append(l.big, id)
}

// Len returns the number of IDs.
func (l *List) Len() int { return len(l.small) + len(l.big) }

// At returns the i-th ID.
func (l *List) At(i int) int64 {
	if l.big != nil {
		return l.big[i]
	}
	return int64(l.small[i])
}

// Slice returns the IDs i to j-1.
func (l *List) Slice(i, j int) []int64 {
	out := make([]int64, j-i)
	for k := range out {
		out[k] = l.At(i + k)
	}
	return out
}

// Clip frees the capacity appending left unused.
func (l *List) Clip() { l.small, l.big = Trim(l.small), Trim(l.big) }

// Trim returns s in an array of its length, freeing what append
// over-allocated, up to as much again (slices.Clip only hides it).
func Trim[T any](s []T) []T {
	if cap(s) == len(s) {
		return s
	}
	return append(make([]T, 0, len(s)), s...)
}

// Contains reports whether id is in the list, which must be ascending.
func (l *List) Contains(id int64) bool {
	i := sort.Search(l.Len(), func(i int) bool { return l.At(i) >= id })
	return i < l.Len() && l.At(i) == id
}
