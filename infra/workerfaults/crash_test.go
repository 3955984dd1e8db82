package workerfaults_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/stacktest"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// errGone is what a dead worker's store and queues answer.
var errGone = errors.New("worker process is gone")

// mortal gives a worker's store and queue the fate of its process: once the process's
// context ends, nothing the worker asks of them happens any more. A worker built on them
// behaves like a Lambda invocation whose process is killed: it can be stopped at any point,
// and whatever it had not yet written is never written.
type mortal struct {
	life context.Context
}

type mortalStore struct {
	mortal
	notify.Store
}

func (s mortalStore) Get(ctx context.Context, key string) (notify.Record, error) {
	if s.life.Err() != nil {
		return notify.Record{}, errGone
	}
	return s.Store.Get(ctx, key)
}

func (s mortalStore) Transition(ctx context.Context, prev, next notify.Record) error {
	if s.life.Err() != nil {
		return errGone
	}
	return s.Store.Transition(ctx, prev, next)
}

type mortalQueue struct {
	mortal
	notify.Queue
}

func (q mortalQueue) Enqueue(ctx context.Context, queue notify.QueueName, m notify.Message, d time.Duration) error {
	if q.life.Err() != nil {
		return errGone
	}
	return q.Queue.Enqueue(ctx, queue, m, d)
}

// TestWorkerKilledMidCall kills a dispatch worker while its provider call is in flight: the
// process's context ends (which also cuts the HTTP request), and from then on nothing it
// would write reaches the store or the queues, and its queue message is not deleted. The
// record stays dispatching under the dead worker's lease. The surviving workers then run as
// usual: the redelivered message finds the lease still held and leaves the record alone; once
// the lease has run out the sweeper makes the record dispatch_unknown / LEASE_EXPIRED, and
// reconciliation looks the attempt up:
//
//   - killed after the provider recorded the message (accept_then_timeout): found, so
//     sent / RECONCILED_ACCEPTED, and the provider received exactly one send;
//   - killed before the provider recorded it (timeout_before_accept): not found, so
//     retry_scheduled / RECONCILED_NOT_FOUND and a second attempt, which is accepted; the
//     first attempt's reference never reaches the provider again.
func TestWorkerKilledMidCall(t *testing.T) {
	cases := []struct {
		name  string
		modes []smssim.Mode
		// killWhen says when the call is far enough for the kill.
		killWhen func(simapi.RequestEntry) bool
		path     []stacktest.Step
		sends    int
	}{
		{
			name:     "after the provider recorded the message",
			modes:    []smssim.Mode{smssim.ModeAcceptThenTimeout},
			killWhen: func(e simapi.RequestEntry) bool { return e.Recorded },
			path:     steps(lease, "dispatch_unknown/LEASE_EXPIRED", "sent/RECONCILED_ACCEPTED"),
			sends:    1,
		},
		{
			name:     "before the provider recorded the message",
			modes:    []smssim.Mode{smssim.ModeTimeoutBeforeAccept, smssim.ModeAccept},
			killWhen: func(e simapi.RequestEntry) bool { return !e.Recorded },
			path:     steps(lease, "dispatch_unknown/LEASE_EXPIRED", "retry_scheduled/RECONCILED_NOT_FOUND", lease, "sent/PROVIDER_ACCEPTED"),
			sends:    2,
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The call may last 3 s; the lease must outlast it by workercore.LeaseMargin.
			st := stacktest.NewStack(t, stacktest.StackOptions{
				Sim:        smssim.Config{Visibility: time.Second, DeliveryDelay: time.Hour},
				SMSTimeout: 3 * time.Second,
				Visibility: time.Second,
				Worker:     &config.Worker{Lease: 8 * time.Second, BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second},
			})
			to := fmt.Sprintf("+1555050%04d", i)
			key := fmt.Sprintf("crash-%d", i)
			st.Sim.SetFault(to, tc.modes...)
			st.Submit(t, request(key, to, notify.DefaultPolicy(), 5*time.Minute))

			life, kill := context.WithCancel(context.Background())
			defer kill()
			d := st.Dispatcher
			victim := &dispatch.Dispatcher{
				Store: mortalStore{mortal{life}, d.Store}, Opener: d.Opener, Renderer: d.Renderer,
				Sender: d.Sender, Provider: d.Provider,
				Base: workercore.Base{Queue: mortalQueue{mortal{life}, d.Queue},
					Clock: d.Clock, Settings: d.Settings, Log: d.Log, Metrics: d.Metrics},
			}
			done := make(chan error, 1)
			go func() {
				// One receive, as one Lambda invocation; its deletes die with it. The message
				// comes back after a short visibility timeout.
				_, err := pump.Once(life, st.SQS, st.DispatchURL, victim.Handle, pump.Options{
					WaitTime: 5 * time.Second, VisibilityTimeout: 2 * time.Second, Region: emulator.Region,
				})
				done <- err
			}()
			waitFor(t, 20*time.Second, 10*time.Millisecond, "the victim's provider call", func() bool {
				reqs := requestsTo(st.Sim.Requests(), to)
				return len(reqs) == 1 && reqs[0].HTTPStatus == 0 && tc.killWhen(reqs[0])
			})
			kill()
			if err := <-done; err == nil {
				t.Error("the killed worker's invocation ended cleanly; its message should not have been deleted")
			}
			if rec := st.Get(t, key); rec.State != notify.StateDispatching || rec.Attempt != 1 {
				t.Fatalf("after the kill: %s/%s attempt %d, want dispatching at attempt 1", rec.State, rec.Reason, rec.Attempt)
			}

			st.RunUntil(t, 60*time.Second, true, func() bool { return st.Get(t, key).State.SendingDone() })

			rec := st.Get(t, key)
			if diff := cmp.Diff(tc.path, st.Transitions(key)); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			reqs := requestsTo(st.Sim.Requests(), to)
			if len(reqs) != tc.sends {
				t.Fatalf("provider received %v, want %d sends", modes(reqs), tc.sends)
			}
			for n, r := range reqs {
				if want := sms.AttemptRef(rec.NotificationID, n+1); r.ClientRef != want {
					t.Errorf("send %d carries %s, want %s", n+1, r.ClientRef, want)
				}
			}
			inbox := st.Sim.Accepted(to)
			if len(inbox) != 1 || inbox[0].MessageID != rec.ProviderMessageID {
				t.Errorf("accepted %d messages; record holds %s", len(inbox), rec.ProviderMessageID)
			}
		})
	}
}
