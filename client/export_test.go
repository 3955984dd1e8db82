package client

import (
	"context"
	"time"
)

// SetSleep replaces how c waits out a backoff, so a test can make a timer fire late.
func SetSleep(c *Client, sleep func(context.Context, time.Duration) error) { c.sleep = sleep }

// SetNow replaces the clock c checks a request's notAfter against.
func SetNow(c *Client, now func() time.Time) { c.now = now }
