package respdiff

import (
	"fmt"
	"testing"
)

// TestRecordingWithoutBodies: a recording made with its bodies cut or not
// kept (--body-limit) teaches no body noise, so the candidate's changed
// field is still found; and a build checked against such a recording
// differs only where the kept part or the size does.
func TestRecordingWithoutBodies(t *testing.T) {
	body := func(id int64, typed bool) string {
		if typed {
			return fmt.Sprintf(`{"id":"%d","name":"n%d"}`, id, id)
		}
		return fmt.Sprintf(`{"id":%d,"name":"n%d"}`, id, id)
	}
	base := answers(10, func(id int64, k int) string { return body(id, false) })
	cand := answers(10, func(id int64, k int) string { return body(id, true) })
	for _, keep := range []int{0, 5} { // bytes of each body the recording kept
		rec := &Side{}
		for id := int64(1); id <= 10; id++ {
			full := jsonAnswer(body(id, false))
			a := full
			a.Body, a.BodySize, a.Truncated = full.Body[:keep], int64(len(full.Body)), true
			rec.Add(id, a)
		}
		s := compile(t, Rules{}).Endpoint(base, cand, rec)
		if s.Differing != 20 || len(s.Ignored) != 0 {
			t.Errorf("recording keeping %d bytes: %d differing, ignored %+v; want 20 differing, nothing ignored", keep, s.Differing, s.Ignored)
		}
		if c := compile(t, Rules{}).Check(base, rec); c.Differing != 0 {
			t.Errorf("recording keeping %d bytes: the baseline checked against it: %d differing, want 0: %+v", keep, c.Differing, c.Differences)
		}
		if c := compile(t, Rules{}).Check(cand, rec); keep > 0 && c.Differing != 20 {
			t.Errorf("recording keeping %d bytes: the candidate checked against it: %d differing, want 20", keep, c.Differing)
		}
	}
}
