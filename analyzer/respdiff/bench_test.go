package respdiff

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkEndpoint compares one endpoint's sample as a comparison does:
// 32 requests answered twice on each side, 4 KB JSON lists of 40 items
// with a timestamp that varies (noise to learn) and one changed field.
func BenchmarkEndpoint(b *testing.B) {
	body := func(id int64, k int, cand bool) string {
		var items []string
		for i := range 40 {
			price := fmt.Sprint(i * 10)
			if cand && i == 7 {
				price = `"70"`
			}
			items = append(items, fmt.Sprintf(`{"id":%d,"sku":"sku-%d","qty":%d,"price":%s}`, i, i, i%3+1, price))
		}
		return fmt.Sprintf(`{"order":%d,"at":"2025-03-01T12:00:%02dZ","items":[%s]}`, id, k, strings.Join(items, ","))
	}
	bodies := map[bool][][2]string{}
	for _, cand := range []bool{false, true} {
		for id := int64(1); id <= 32; id++ {
			bodies[cand] = append(bodies[cand], [2]string{body(id, 0, cand), body(id, 1, cand)})
		}
	}
	// Fresh sides each time: every answer is decoded again, as in a
	// comparison.
	side := func(cand bool) *Side {
		s := &Side{}
		for i, bs := range bodies[cand] {
			for _, b := range bs {
				s.Add(int64(i+1), jsonAnswer(b))
			}
		}
		return s
	}
	c, err := Rules{}.Compile()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(64 * len(body(1, 0, false))))
	for b.Loop() {
		if s := c.Endpoint(side(false), side(true), nil); s.Differing != 64 {
			b.Fatalf("differing %d", s.Differing)
		}
	}
}
