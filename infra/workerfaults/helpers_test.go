package workerfaults_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// code is the one-time code every test request carries; it must never reach a log.
const code = "Q7Z3K9"

// request returns a request for key to the number to whose dispatch deadline is deadlineIn from
// now under policy p.
func request(key, to string, p notify.Policy, deadlineIn time.Duration) notify.Request {
	return notify.Request{
		IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS,
		Purpose: notify.PurposePasswordReset, To: to, Locale: "en",
		Params:    map[string]string{notify.ParamCode: code},
		ExpiresAt: time.Now().UTC().Add(deadlineIn + p.SafetyMargin),
	}
}

// requestsTo returns the simulator's log of send requests to to, in arrival order.
func requestsTo(all []simapi.RequestEntry, to string) []simapi.RequestEntry {
	var out []simapi.RequestEntry
	for _, e := range all {
		if e.To == to {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b simapi.RequestEntry) int { return a.Seq - b.Seq })
	return out
}

// modes lists the modes of entries, for failure messages.
func modes(entries []simapi.RequestEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ClientRef[strings.LastIndex(e.ClientRef, "-")+1:] + ":" + e.Mode + ":" + strconv.Itoa(e.HTTPStatus)
		if e.Recorded {
			out[i] += ":recorded"
		}
	}
	return out
}

// crew runs the workers the way Lambda would, concurrently: several pollers on each queue (each
// batch handled with the worker's own parallelism) and the sweeper on a schedule.
type crew struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	once   sync.Once
}

// crewOptions shape a crew.
type crewOptions struct {
	// Dispatchers and Reconcilers are the pollers per queue.
	Dispatchers, Reconcilers int
	// SweepEvery is the sweeper's period; 0 means no sweeper.
	SweepEvery time.Duration
	// Visibility hides each received message for this long.
	Visibility time.Duration
}

// startCrew starts the workers of st; stop them with stop.
func startCrew(st *stacktest.Stack, o crewOptions) *crew {
	ctx, cancel := context.WithCancel(context.Background())
	c := &crew{cancel: cancel}
	poll := func(queueURL string, h workercore.BatchHandler) {
		defer c.wg.Done()
		for ctx.Err() == nil {
			_, err := pump.Once(ctx, st.SQS, queueURL, h, pump.Options{
				WaitTime: time.Second, VisibilityTimeout: o.Visibility, Region: emulator.Region,
			})
			if err != nil && ctx.Err() == nil {
				c.fail(err)
			}
		}
	}
	for range o.Dispatchers {
		c.wg.Add(1)
		go poll(st.DispatchURL, st.Dispatcher.Handle)
	}
	for range o.Reconcilers {
		c.wg.Add(1)
		go poll(st.ReconcileURL, st.Reconciler.Handle)
	}
	if o.SweepEvery > 0 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			tick := time.NewTicker(o.SweepEvery)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := st.Sweeper.Sweep(ctx); err != nil && ctx.Err() == nil {
					c.fail(err)
				}
			}
		}()
	}
	return c
}

func (c *crew) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

// stop stops the workers, waits for them and returns what went wrong while they ran. Only the
// first call returns the errors.
func (c *crew) stop() error {
	var err error
	c.once.Do(func() {
		c.cancel()
		c.wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		err = errors.Join(c.errs...)
	})
	return err
}

// waitFor polls cond every interval until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %s", what, timeout)
		}
		time.Sleep(interval)
	}
}
