package gameday

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/resetnotify/resetnotify/infra/faultproxy"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// PreviousRelease is the release the upgrade scenario deploys first, the commit main was last
// released from (docs/operations.md, "Releases"); a release moves it on.
const PreviousRelease = "d34737f"

// Item is a DynamoDB item as the SDK returns it.
type Item = map[string]ddbtypes.AttributeValue

// upgrade is one run of the upgrade scenario: the deploy of this checkout over the previous
// release, and what it found.
type upgrade struct {
	// deploy deploys this checkout over the stack; scan returns the notifications table's
	// items whose key holds tag. Tests replace both.
	deploy func(ctx context.Context) ([]byte, error)
	scan   func(ctx context.Context, x *Exec, tag string) ([]Item, error)
	// reload reads the deployed alarms again once the deploy is done (Run.ReloadAlarms).
	reload func(ctx context.Context, x *Exec) error

	mu         sync.Mutex
	deployedAt time.Time
	err        error
}

// Upgrade is the upgrade game day: the stack starts as PreviousRelease (emulator.sh's
// RESETNOTIFY_EMULATOR_FROM, set by gameday.sh for the lane this scenario opens) and this
// checkout is deployed over it under load and provider faults.
func Upgrade() Scenario {
	u := &upgrade{deploy: deployCheckout, scan: scanNotifications,
		reload: func(ctx context.Context, x *Exec) error { return x.ReloadAlarms(ctx) }}
	return Scenario{
		Name: "upgrade", From: PreviousRelease, Takes: 15 * time.Minute,
		Proves: "release " + PreviousRelease + " deployed, then this checkout deployed over it (sam build, sam deploy) under load, 10 % of SQS messages delivered twice " +
			"and sends that time out after the provider took them: every record the old release wrote reads with this checkout's decoder, " +
			"nothing is sent twice or late, nothing sticks, the audit trail verifies across the deploy, and no page fires.",
		Platform: true, Hold: 2 * time.Minute, Rate: 2,
		MinFaults: map[string]int64{"sqs-duplicate": 3, "accept-then-timeout": 3, "upgrade-deploy": 1},
		Inject:    u.inject,
		During:    u.during,
		Check:     u.check,
	}
}

// inject refuses a stack that is not the previous release (the scenario would prove nothing),
// then duplicates SQS messages for the hold.
func (u *upgrade) inject(ctx context.Context, x *Exec) error {
	if got := os.Getenv("RESETNOTIFY_EMULATOR_DEPLOYED"); got != x.Scenario.From {
		return fmt.Errorf("the stack is release %q, want %s first: run it with make gameday, or RESETNOTIFY_EMULATOR_FROM=%s infra/emulator/emulator.sh",
			got, x.Scenario.From, x.Scenario.From)
	}
	return x.AddRules(ctx, faultproxy.Rule{Service: "sqs", Operations: []string{"SendMessage", "SendMessageBatch"}, Kind: faultproxy.KindSQSDuplicate, Rate: 0.1})
}

// during deploys this checkout while a second load, whose sends time out after the provider
// took them, leaves unknown outcomes for the new release to reconcile.
func (u *upgrade) during(ctx context.Context, x *Exec) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l := NewLoad(x.S, x.Scenario.Name+"-unknown", 0.2)
		l.Number = func() string {
			to := NormalNumber()
			if err := x.SimAll(ctx, http.MethodPost, "/control/faults", simapi.Fault{To: to, Modes: []string{"accept_then_timeout", "accept"}}); err == nil {
				x.CountFault("accept-then-timeout", 1)
			}
			return to
		}
		x.AddLoad(l)
		l.Run(ctx)
	}()
	start := time.Now().UTC()
	x.Logf("%s: deploying this checkout over %s", x.Scenario.Name, x.Scenario.From)
	// The deploy runs to its end even past the hold: a half-deployed stack is no verdict.
	out, err := u.deploy(context.WithoutCancel(ctx))
	u.mu.Lock()
	u.deployedAt, u.err = start, err
	u.mu.Unlock()
	if err != nil {
		x.Logf("%s: deploy failed: %v\n%s", x.Scenario.Name, err, tail(out, 20))
	} else {
		x.CountFault("upgrade-deploy", 1)
		x.Logf("%s: deployed in %s", x.Scenario.Name, time.Since(start).Round(time.Second))
		// From here the stack is judged by this checkout's alarms: the previous release's
		// that it removed are no longer evaluated, those it added are.
		if err := u.reload(context.WithoutCancel(ctx), x); err != nil {
			u.mu.Lock()
			u.err = fmt.Errorf("read the alarms this checkout deployed: %w", err)
			u.mu.Unlock()
		}
	}
	wg.Wait()
}

// check fails the scenario when the deploy failed, or when a record of its loads does not read
// with this checkout's decoder, or when none was written before the deploy (nothing crossed it).
func (u *upgrade) check(ctx context.Context, x *Exec) []string {
	u.mu.Lock()
	at, err := u.deployedAt, u.err
	u.mu.Unlock()
	if err != nil {
		return []string{fmt.Sprintf("deploy of this checkout over %s: %v", x.Scenario.From, err)}
	}
	items, err := u.scan(ctx, x, "gd-"+x.S.RunID+"-"+x.Scenario.Name)
	if err != nil {
		return []string{"read the notifications table: " + err.Error()}
	}
	before, problems := ReadRecords(items, at)
	if before == 0 {
		problems = append(problems, fmt.Sprintf("vacuous: no record of the scenario's loads was written before the deploy (%d records read)", len(items)))
	}
	x.Logf("%s: %d records read with this checkout's decoder, %d written before the deploy", x.Scenario.Name, len(items), before)
	return problems
}

// ReadRecords decodes every item as this checkout's dispatch reads a record, and requires what
// every release relies on (key, ID, known state, version, the deadlines); it returns how many
// were created before at, and a problem per item that does not read.
func ReadRecords(items []Item, at time.Time) (before int, problems []string) {
	for _, it := range items {
		r, err := dynamostore.RecordFromItem(it)
		if err == nil {
			err = complete(r)
		}
		if err != nil {
			key := ""
			if k, ok := it["idempotency_key"].(*ddbtypes.AttributeValueMemberS); ok {
				key, _, _ = strings.Cut(k.Value, ":")
			}
			problems = append(problems, fmt.Sprintf("record %s does not read with this checkout's decoder: %v", key, err))
			continue
		}
		if r.CreatedAt.Before(at) {
			before++
		}
	}
	return before, problems
}

// complete reports what a decoded record lacks that every release relies on.
func complete(r notify.Record) error {
	var missing []string
	for name, empty := range map[string]bool{
		"idempotency key": r.IdempotencyKey == "", "notification ID": r.NotificationID == "",
		"state": r.State == notify.StateNone, "version": r.Version < 1, "created_at": r.CreatedAt.IsZero(),
		"expires_at": r.ExpiresAt.IsZero(), "dispatch deadline": r.DispatchDeadline.IsZero(),
	} {
		if empty {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	return nil
}

// deployCheckout deploys this checkout over the running stack with emulator.sh's own deploy.
func deployCheckout(ctx context.Context) ([]byte, error) {
	return exec.CommandContext(ctx, "infra/emulator/deploy.sh", ".").CombinedOutput()
}

// scanNotifications returns the notifications table's items whose key holds tag.
func scanNotifications(ctx context.Context, x *Exec, tag string) ([]Item, error) {
	table := os.Getenv("RESETNOTIFY_E2E_NOTIFICATIONS_TABLE")
	if table == "" {
		return nil, fmt.Errorf("RESETNOTIFY_E2E_NOTIFICATIONS_TABLE is not set: run as the command of infra/emulator/emulator.sh")
	}
	db := dynamodb.NewFromConfig(x.S.AWS, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(x.S.Endpoint) })
	in := &dynamodb.ScanInput{TableName: aws.String(table), FilterExpression: aws.String("contains(idempotency_key, :tag)"),
		ExpressionAttributeValues: Item{":tag": &ddbtypes.AttributeValueMemberS{Value: tag}}}
	var out []Item
	for p := dynamodb.NewScanPaginator(db, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
	}
	return out, nil
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
