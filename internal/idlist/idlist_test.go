package idlist

import (
	"math"
	"testing"
)

// TestList: IDs read back as appended, in 4 bytes while they fit and after
// one does not; Contains finds exactly the IDs of an ascending list.
func TestList(t *testing.T) {
	var l List
	want := []int64{1, 3, 5, math.MaxUint32, 7}
	for _, id := range want[:4] {
		l.Append(id)
	}
	if l.big != nil || len(l.small) != 4 {
		t.Fatalf("IDs that fit in 32 bits: small %d, big %d", len(l.small), len(l.big))
	}
	if !l.Contains(3) || l.Contains(4) || !l.Contains(math.MaxUint32) || l.Contains(0) {
		t.Error("Contains is wrong on an ascending list")
	}
	l.Append(math.MaxUint32 + 1)
	l.Append(-2)
	want = append(want[:4], math.MaxUint32+1, -2)
	if l.Len() != len(want) {
		t.Fatalf("len %d, want %d", l.Len(), len(want))
	}
	for i, id := range want {
		if l.At(i) != id {
			t.Errorf("At(%d) = %d, want %d", i, l.At(i), id)
		}
	}
	if got := l.Slice(1, 3); got[0] != 3 || got[1] != 5 {
		t.Errorf("Slice(1, 3) = %v", got)
	}
}

// TestClipFrees: Clip moves the list to an array of its length (what
// append over-allocated is freed, not only hidden).
func TestClipFrees(t *testing.T) {
	var l List
	for i := range 1000 {
		l.Append(int64(i))
	}
	if cap(l.small) == l.Len() {
		t.Skip("append allocated exactly")
	}
	l.Clip()
	if cap(l.small) != 1000 || l.At(999) != 999 || l.big != nil {
		t.Errorf("after Clip: cap %d, last %d", cap(l.small), l.At(999))
	}
	if s := Trim(make([]int32, 3, 10)); cap(s) != 3 || len(s) != 3 {
		t.Errorf("Trim: len %d cap %d", len(s), cap(s))
	}
	if s := Trim([]int64(nil)); s != nil {
		t.Errorf("Trim(nil) = %v", s)
	}
}
