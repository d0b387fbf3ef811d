package app

import (
	"crypto/sha256"
	"net/http"
	"runtime"
	"time"
)

// ParseBurn parses APP_BURN: entries "ROUTE=DURATION" separated by commas,
// as ParseDelay's, e.g. "GET /orders/{id}=40us": the CPU time each request
// of that route spends in a busy loop before its handler runs.
func ParseBurn(s string) (map[string]time.Duration, error) {
	return ParseDelay(s)
}

// burning spends d of CPU time in a busy loop (hashing) before h runs: a
// build that does more work per request and nothing else, to test that a
// comparison finds its CPU per request. The loop runs until the thread's
// CPU clock has advanced by d (the goroutine locked to its thread the
// while), or, where there is no such clock, until the wall clock has; a
// request whose client gives up meanwhile gets no answer.
func burning(d time.Duration, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !burn(r, d) {
			return
		}
		h(w, r)
	}
}

// burn spins for d of CPU time (see burning); false when r's context ended
// first.
func burn(r *http.Request, d time.Duration) bool {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clock := threadCPU
	if _, ok := threadCPU(); !ok {
		clock = wallClock
	}
	start, _ := clock()
	var sum [sha256.Size]byte
	for i := 0; ; i++ {
		// 16 hashes of 32 bytes: a few microseconds, so the clock is
		// read often enough for a burn of tens of microseconds.
		for range 16 {
			sum = sha256.Sum256(sum[:])
		}
		if now, _ := clock(); now-start >= d {
			return true
		}
		if i%64 == 63 && r.Context().Err() != nil {
			return false
		}
	}
}

var wallStart = time.Now()

func wallClock() (time.Duration, bool) { return time.Since(wallStart), true }
