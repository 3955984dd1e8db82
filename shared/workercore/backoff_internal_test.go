package workercore

import (
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	base, maxWait := time.Second, 10*time.Second
	for _, tc := range []struct {
		n        int
		min, max time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{2, time.Second, 2 * time.Second},
		{4, 4 * time.Second, 8 * time.Second},
		{5, 5 * time.Second, 10 * time.Second},
		{60, 5 * time.Second, 10 * time.Second},
	} {
		lo := backoff(tc.n, base, maxWait, func() float64 { return 0 })
		hi := backoff(tc.n, base, maxWait, func() float64 { return 0.999999999 })
		if lo != tc.min || hi < tc.max-time.Millisecond || hi > tc.max {
			t.Errorf("backoff(%d) in [%s, %s], want [%s, %s]", tc.n, lo, hi, tc.min, tc.max)
		}
	}
}
