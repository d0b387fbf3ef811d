//go:build !linux

package replayer

import (
	"errors"
	"time"
)

// canSleepPrecisely reports false: outside Linux, waiters use Go timers
// only.
func canSleepPrecisely() bool { return false }

func sleepPrecisely(time.Duration) error { return errors.ErrUnsupported }
