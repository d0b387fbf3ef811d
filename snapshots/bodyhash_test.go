package snapshots

import "testing"

// TestBodyHasher: a body hashed in pieces hashes as the whole, and bodies
// that differ in a byte or in length hash apart.
func TestBodyHasher(t *testing.T) {
	body := []byte(`{"id":7,"items":[{"sku":"SKU-1001"},{"sku":"SKU-1002"}]}`)
	for _, cut := range [][]int{{}, {1}, {5, 17}, {0, 0, len(body)}} {
		var h BodyHasher
		at := 0
		for _, c := range cut {
			h.Write(body[at:c])
			at = c
		}
		h.Write(body[at:])
		if h.Sum64() != HashBody(body) {
			t.Errorf("cut at %v: %x, want %x", cut, h.Sum64(), HashBody(body))
		}
	}
	other := append([]byte(nil), body...)
	other[5] = '8'
	if HashBody(other) == HashBody(body) || HashBody(body[:10]) == HashBody(body) || HashBody(nil) == HashBody([]byte{0}) {
		t.Errorf("different bodies hash alike")
	}
}
