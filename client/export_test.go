package client

import (
	"context"
	"time"
)

// SetSleep replaces how c waits out a backoff, so a test can make a timer fire late.
func SetSleep(c *Client, sleep func(context.Context, time.Duration) error) { c.sleep = sleep }
