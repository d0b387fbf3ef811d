package ca

import (
	"fmt"
	"testing"
)

// BenchmarkLeaf measures signing a new leaf (ECDSA P-256) and fetching a
// cached one.
func BenchmarkLeaf(b *testing.B) {
	c, err := LoadOrCreate(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			if _, err := c.Leaf(fmt.Sprintf("h%d.test", i)); err != nil {
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
