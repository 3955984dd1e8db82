package emfbridge

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
)

// LogsAPI is the part of the CloudWatch Logs client a Tailer calls.
type LogsAPI interface {
	DescribeLogGroups(ctx context.Context, in *cloudwatchlogs.DescribeLogGroupsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogGroupsOutput, error)
	FilterLogEvents(ctx context.Context, in *cloudwatchlogs.FilterLogEventsInput, opts ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.FilterLogEventsOutput, error)
}

// Defaults of a Tailer.
const (
	// LambdaLogGroupPrefix is where Lambda (and MiniStack) write each function's output.
	LambdaLogGroupPrefix = "/aws/lambda/"
	// DefaultPollInterval is how often Run polls.
	DefaultPollInterval = time.Second
	// DefaultLookback is how far before the newest event seen each poll asks again: events
	// stamped a little earlier may be written later (MiniStack stamps an invocation's lines
	// when it ends, and concurrent invocations end in any order). Events already fed are
	// remembered, never fed twice.
	DefaultLookback = 10 * time.Second
	// DefaultNearLookback is how far back the polls between two DeepEvery-th ones ask: each
	// poll reads the whole lookback again, on the emulator's one request loop, so a burst's
	// logs cost it the lookback over the interval times more than they are new.
	DefaultNearLookback = 2 * time.Second
	// DeepEvery is how often (in polls of a group) a poll asks over the whole Lookback: an
	// event written later than DefaultNearLookback after its stamp is fed that late.
	DeepEvery = 10
	// filterLimit is the most events one FilterLogEvents asks for.
	filterLimit = 10_000
)

// Tailer polls the log groups whose name starts with Prefix and feeds each new event's message
// to Sink, once. Its methods are safe for concurrent use.
type Tailer struct {
	Logs LogsAPI
	// Prefix selects the log groups; empty means LambdaLogGroupPrefix.
	Prefix string
	// Sink receives each new event's message (Bridge.Line).
	Sink func(line []byte)
	// PollInterval, Lookback and NearLookback: zero means DefaultPollInterval,
	// DefaultLookback and DefaultNearLookback.
	PollInterval, Lookback, NearLookback time.Duration

	mu     sync.Mutex
	groups map[string]*groupCursor
	// names are the groups the last listing found; polls counts Poll's calls.
	names []string
	polls int
}

// groupCursor is where a Tailer is in one log group.
type groupCursor struct {
	newest int64 // the newest event timestamp fed (ms)
	polls  int   // the polls of the group so far
	// seen holds the events fed at or after newest-lookback, by stream, timestamp and the
	// event's position among the stream's events of that timestamp.
	seen map[eventKey]bool
}

type eventKey struct {
	stream string
	ts     int64
	n      int
}

// Poll reads every matching log group once and feeds what is new. It lists the groups on its
// first call and every DeepEvery-th after: MiniStack's DescribeLogGroups sums the bytes of every
// event it holds, so listing each second cost the emulator's one request loop more as its logs
// grew (a third of a core, idle, after a burst) than the reads themselves. A group created
// between two listings is read from its first event once listed, so nothing is lost; its
// metrics come up to DeepEvery polls late, which only a function's first invocation meets.
func (t *Tailer) Poll(ctx context.Context) error {
	names, err := t.groupNames(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		if err := t.pollGroup(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// groupNames lists the matching log groups on Poll's first call and every DeepEvery-th after,
// and returns the last listing between them.
func (t *Tailer) groupNames(ctx context.Context) ([]string, error) {
	t.mu.Lock()
	list := t.polls%DeepEvery == 0 || t.names == nil
	t.polls++
	names := t.names
	t.mu.Unlock()
	if !list {
		return names, nil
	}
	prefix := cmp.Or(t.Prefix, LambdaLogGroupPrefix)
	names = nil
	in := &cloudwatchlogs.DescribeLogGroupsInput{LogGroupNamePrefix: aws.String(prefix)}
	for {
		out, err := t.Logs.DescribeLogGroups(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("emfbridge: describe log groups %s: %w", prefix, err)
		}
		for _, g := range out.LogGroups {
			names = append(names, aws.ToString(g.LogGroupName))
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		in.NextToken = out.NextToken
	}
	t.mu.Lock()
	t.names = names
	t.mu.Unlock()
	return names, nil
}

// cursor returns where t is in the log group name, a new cursor for a group not read yet.
func (t *Tailer) cursor(name string) *groupCursor {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.groups == nil {
		t.groups = map[string]*groupCursor{}
	}
	c := t.groups[name]
	if c == nil {
		c = &groupCursor{seen: map[eventKey]bool{}}
		t.groups[name] = c
	}
	return c
}

func (t *Tailer) pollGroup(ctx context.Context, name string) error {
	c := t.cursor(name)
	lookback, near := cmp.Or(t.Lookback, DefaultLookback), cmp.Or(t.NearLookback, DefaultNearLookback)
	back := near
	if c.polls%DeepEvery == 0 {
		back = lookback
	}
	c.polls++
	from := max(c.newest-back.Milliseconds(), 0)
	for {
		in := &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(name), StartTime: aws.Int64(from), Limit: aws.Int32(filterLimit)}
		var events []types.FilteredLogEvent
		for {
			out, err := t.Logs.FilterLogEvents(ctx, in)
			if err != nil {
				return fmt.Errorf("emfbridge: filter log events %s: %w", name, err)
			}
			events = append(events, out.Events...)
			if aws.ToString(out.NextToken) == "" {
				break
			}
			in.NextToken = out.NextToken
		}
		// Position of each event among its stream's events of the same timestamp.
		pos := map[eventKey]int{}
		newest := c.newest
		for _, e := range events {
			k := eventKey{stream: aws.ToString(e.LogStreamName), ts: aws.ToInt64(e.Timestamp)}
			k.n = pos[k]
			pos[eventKey{stream: k.stream, ts: k.ts}]++
			if k.ts < from || c.seen[k] {
				continue
			}
			c.seen[k] = true
			newest = max(newest, k.ts)
			if t.Sink != nil {
				t.Sink([]byte(aws.ToString(e.Message)))
			}
		}
		c.newest = newest
		for k := range c.seen {
			if k.ts < c.newest-lookback.Milliseconds() {
				delete(c.seen, k)
			}
		}
		// An emulator that ignores NextToken caps an answer at the limit: ask again from the
		// newest timestamp of a full answer.
		if len(events) < filterLimit || aws.ToInt64(events[len(events)-1].Timestamp) <= from {
			return nil
		}
		from = aws.ToInt64(events[len(events)-1].Timestamp)
	}
}

// Run polls every PollInterval until ctx ends. Failed polls (a log group deleted under it, an
// emulator restarting) do not stop it; onError, when set, is told of each.
func (t *Tailer) Run(ctx context.Context, onError func(error)) error {
	every := t.PollInterval
	if every <= 0 {
		every = DefaultPollInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := t.Poll(ctx); err != nil && ctx.Err() == nil && onError != nil {
			onError(err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
