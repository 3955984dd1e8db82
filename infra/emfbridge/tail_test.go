package emfbridge_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/google/go-cmp/cmp"

	"github.com/resetnotify/resetnotify/infra/emfbridge"
)

// fakeLogs is CloudWatch Logs as MiniStack keeps a function's output: events by group, each
// invocation's lines in a stream of their own, all stamped alike; FilterLogEvents returns
// those at or after startTime, oldest first, two per page.
type fakeLogs struct {
	groups map[string][]types.FilteredLogEvent
	// asked is the StartTime of each first page asked for.
	asked []int64
	// listed counts DescribeLogGroups calls.
	listed int
}

func (f *fakeLogs) add(group, stream string, ts int64, msgs ...string) {
	if f.groups == nil {
		f.groups = map[string][]types.FilteredLogEvent{}
	}
	for _, m := range msgs {
		f.groups[group] = append(f.groups[group], types.FilteredLogEvent{LogStreamName: aws.String(stream), Timestamp: aws.Int64(ts), Message: aws.String(m)})
	}
	slices.SortStableFunc(f.groups[group], func(a, b types.FilteredLogEvent) int { return int(*a.Timestamp - *b.Timestamp) })
}

func (f *fakeLogs) DescribeLogGroups(_ context.Context, in *cloudwatchlogs.DescribeLogGroupsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogGroupsOutput, error) {
	f.listed++
	out := &cloudwatchlogs.DescribeLogGroupsOutput{}
	for g := range f.groups {
		if len(g) >= len(*in.LogGroupNamePrefix) && g[:len(*in.LogGroupNamePrefix)] == *in.LogGroupNamePrefix {
			out.LogGroups = append(out.LogGroups, types.LogGroup{LogGroupName: aws.String(g)})
		}
	}
	return out, nil
}

func (f *fakeLogs) FilterLogEvents(_ context.Context, in *cloudwatchlogs.FilterLogEventsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error) {
	if in.NextToken == nil {
		f.asked = append(f.asked, aws.ToInt64(in.StartTime))
	}
	var all []types.FilteredLogEvent
	for _, e := range f.groups[*in.LogGroupName] {
		if *e.Timestamp >= aws.ToInt64(in.StartTime) {
			all = append(all, e)
		}
	}
	from := 0
	if in.NextToken != nil {
		from = int((*in.NextToken)[0] - '0')
	}
	out := &cloudwatchlogs.FilterLogEventsOutput{Events: all[from:min(from+2, len(all))]}
	if from+2 < len(all) {
		out.NextToken = aws.String(string(rune('0' + from + 2)))
	}
	return out, nil
}

// TestTailerFeedsEachEventOnce: every event of every /aws/lambda/ group is fed once across
// polls, pages and the lookback, including events stamped earlier than ones already fed and
// identical lines of two invocations, and a group created after the first poll (read from its
// first event once the DeepEvery-th poll lists it); other groups are not read.
func TestTailerFeedsEachEventOnce(t *testing.T) {
	logs := &fakeLogs{}
	var got []string
	tl := &emfbridge.Tailer{Logs: logs, Sink: func(l []byte) { got = append(got, string(l)) }}
	ctx := context.Background()
	logs.add("/aws/lambda/intake", "s1", 1000, "a1", "a2", "a3")
	logs.add("/aws/other", "x", 1000, "never")
	if err := tl.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	logs.add("/aws/lambda/intake", "s2", 5000, "b1", "same")
	logs.add("/aws/lambda/intake", "s3", 5000, "same")
	logs.add("/aws/lambda/intake", "s4", 900, "late") // an invocation that ended earlier, logged later
	logs.add("/aws/lambda/dispatch", "d1", 2000, "c1")
	for range emfbridge.DeepEvery {
		if err := tl.Poll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	want := []string{"a1", "a2", "a3", "b1", "c1", "late", "same", "same"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fed (-want +got):\n%s", diff)
	}
}

// TestTailerListsTheGroupsEveryTenthPoll: of 25 polls, the 1st, 11th and 21st list the log
// groups (each listing costs the emulator a pass over every event it holds); the others read
// the groups the last listing found.
func TestTailerListsTheGroupsEveryTenthPoll(t *testing.T) {
	logs := &fakeLogs{}
	tl := &emfbridge.Tailer{Logs: logs}
	logs.add("/aws/lambda/intake", "s1", 1000, "a")
	for i := range 25 {
		if err := tl.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		if want := i/emfbridge.DeepEvery + 1; logs.listed != want {
			t.Fatalf("after poll %d: %d listings, want %d", i+1, logs.listed, want)
		}
	}
	if len(logs.asked) != 25 {
		t.Errorf("the group was read %d times in 25 polls, want 25", len(logs.asked))
	}
}

// TestTailerAsksTheWholeLookbackEveryTenthPoll: of 20 polls of a group, the 11th asks from 10 s
// before the newest event fed (the 1st from the group's start), the others from 2 s before (what the emulator serves
// again each second); an event written 5 s after its stamp is fed once, by the 11th.
func TestTailerAsksTheWholeLookbackEveryTenthPoll(t *testing.T) {
	logs := &fakeLogs{}
	var got []string
	tl := &emfbridge.Tailer{Logs: logs, Sink: func(l []byte) { got = append(got, string(l)) }}
	logs.add("/aws/lambda/intake", "s1", 100_000, "a")
	var deep []int
	for i := range 20 {
		if i == 2 {
			logs.add("/aws/lambda/intake", "s2", 95_000, "straggler")
		}
		if err := tl.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
		switch from := logs.asked[len(logs.asked)-1]; {
		case i == 0 && from == 0, from == 90_000: // the first poll reads the group from its start
			deep = append(deep, i+1)
		case from == 98_000:
		default:
			t.Fatalf("poll %d asked from %d, want 90000 or 98000", i+1, from)
		}
		if want := i >= 10; slices.Contains(got, "straggler") != want {
			t.Fatalf("after poll %d the straggler fed: %v, want %v", i+1, !want, want)
		}
	}
	if want := []int{1, 11}; !slices.Equal(deep, want) {
		t.Errorf("polls asking over the whole lookback: %v, want %v", deep, want)
	}
	if want := []string{"a", "straggler"}; !slices.Equal(got, want) {
		t.Errorf("fed %v, want %v", got, want)
	}
}
