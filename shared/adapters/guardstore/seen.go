package guardstore

import (
	"sync"
	"time"
)

// maxSeen bounds the destinations one instance remembers per day (about 100 bytes each).
const maxSeen = 50_000

// seenToday is a set of what this instance (one Lambda execution environment) admitted fully
// today (UTC): destination fingerprints, or count IDs. A destination in it is certainly no new
// destination of its prefix today, so its repeats skip the prefix update: one conditional
// write fewer; a count ID in it is counted, so its repeats skip the count. It forgets
// everything at the UTC day change, and stops growing at its bound, so a repeat that lands on
// another instance, or after the bound, costs the updates again (a prefix update then takes a
// slot in the minute's set, as any destination admitted in that minute does; a count finds
// the ID counted).
type seenToday struct {
	mu  sync.Mutex
	day string
	fps map[string]struct{}
	max int
}

func newSeenToday(max int) *seenToday { return &seenToday{fps: map[string]struct{}{}, max: max} }

// has reports whether fp was added on now's UTC day.
func (c *seenToday) has(fp string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(now)
	_, ok := c.fps[fp]
	return ok
}

// add remembers fp for now's UTC day, unless the set is full.
func (c *seenToday) add(fp string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.roll(now)
	if len(c.fps) < c.max {
		c.fps[fp] = struct{}{}
	}
}

// roll forgets every fingerprint when now is on another UTC day than the set.
func (c *seenToday) roll(now time.Time) {
	if day := now.UTC().Format("20060102"); day != c.day {
		c.day = day
		clear(c.fps)
	}
}
