package notify

import "time"

// Clock tells the time. The core never calls time.Now itself.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock, in UTC.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }
