package workerfaults_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/pump"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// TestSweeperRecoversLostRetryAndReconcileMessages extends
// TestSweeperFinishesARecordWhoseMessageWasLost (a lost intake message) to the two
// messages the workers send themselves: a throttled record's delayed retry on the dispatch
// queue and an unknown outcome's delayed lookup on the reconcile queue. Both queues are purged
// while the messages wait; the sweeper finds both records through the due index once they are
// due, and they finish as if nothing had been lost: the unknown one sent after a lookup (one
// send), the throttled one sent by its second attempt (two sends).
func TestSweeperRecoversLostRetryAndReconcileMessages(t *testing.T) {
	st := outcomeStack(t, time.Second)
	ctx := context.Background()
	const unknownKey, retryKey = "lost-reconcile", "lost-retry"
	unknownTo, retryTo := "+15550600000", "+15550600001"
	st.Sim.SetFault(unknownTo, smssim.ModeAcceptThenTimeout)
	st.Sim.SetFault(retryTo, smssim.ModeThrottle, smssim.ModeAccept)
	st.Submit(t, request(unknownKey, unknownTo, notify.DefaultPolicy(), 5*time.Minute))
	st.Submit(t, request(retryKey, retryTo, notify.DefaultPolicy(), 5*time.Minute))

	// Only the dispatch queue runs, until both records wait for a delayed message.
	waitFor(t, 30*time.Second, 10*time.Millisecond, "first attempts", func() bool {
		if _, err := pump.Once(ctx, st.SQS, st.DispatchURL, st.Dispatcher.Handle, pump.Options{Region: emulator.Region}); err != nil {
			t.Fatal(err)
		}
		return st.Get(t, unknownKey).State == notify.StateDispatchUnknown && st.Get(t, retryKey).State == notify.StateRetryScheduled
	})
	for _, q := range []string{st.DispatchURL, st.ReconcileURL} {
		if _, err := st.SQS.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(q)}); err != nil {
			t.Fatal(err)
		}
		if empty, err := pump.Empty(ctx, st.SQS, q); err != nil || !empty {
			t.Fatalf("queue %s not empty after the purge (%v)", q, err)
		}
	}

	st.RunUntil(t, 60*time.Second, true, func() bool {
		return st.Get(t, unknownKey).State.SendingDone() && st.Get(t, retryKey).State.SendingDone()
	})
	for _, tc := range []struct {
		key, to string
		path    []string
		sends   int
	}{
		{unknownKey, unknownTo, []string{lease, "dispatch_unknown/PROVIDER_TIMEOUT", "sent/RECONCILED_ACCEPTED"}, 1},
		{retryKey, retryTo, []string{lease, "retry_scheduled/PROVIDER_THROTTLED", lease, "sent/PROVIDER_ACCEPTED"}, 2},
	} {
		t.Run(tc.key, func(t *testing.T) {
			if diff := cmp.Diff(steps(tc.path...), st.Transitions(tc.key)); diff != "" {
				t.Errorf("path (-want +got):\n%s", diff)
			}
			reqs := requestsTo(st.Sim.Requests(), tc.to)
			if len(reqs) != tc.sends || len(st.Sim.Accepted(tc.to)) != 1 {
				t.Errorf("provider saw %v and accepted %d, want %d sends and 1 accepted", modes(reqs), len(st.Sim.Accepted(tc.to)), tc.sends)
			}
		})
	}
	if t.Failed() {
		t.Log(st.Logs.String())
	}
}
