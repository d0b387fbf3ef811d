package ca

import "testing"

// BenchmarkLeaf measures signing a leaf (ECDSA P-256 key and signature) and
// fetching a cached one.
func BenchmarkLeaf(b *testing.B) {
	c, err := LoadOrCreate(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.sign("api.test"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		if _, err := c.Leaf("api.test"); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			c.Leaf("api.test")
		}
	})
}
