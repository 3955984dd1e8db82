package gameday

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
)

// SweepGrace is how long past its deadline a record may stay non-terminal: the sweeper's grace
// (30 s) and its schedule (every minute). Past it, a non-terminal record is stuck.
const SweepGrace = 30*time.Second + time.Minute

// nonTerminal are the states a record may not keep past its deadline plus SweepGrace. sent is
// terminal for sending (the receipt may come any time later).
var nonTerminal = []string{"accepted", "dispatching", "dispatch_unknown", "retry_scheduled"}

// Invariants are the promises checked after a scenario, over every notification its loads
// submitted.
type Invariants struct {
	// Notifications is how many requests got a record (202, or refused by a guard).
	Notifications int `json:"notifications"`
	// States counts the notifications by final state.
	States map[string]int `json:"states"`
	// DoubleSends counts the messages accepted beyond the first for one notification, summed
	// over every provider of the chain.
	DoubleSends int `json:"double_sends"`
	// LateSends counts the send requests any provider got at or after the notification's
	// dispatch deadline.
	LateSends int `json:"late_sends"`
	// Unconfirmed counts the records sent or delivered that no provider accepted a message for.
	Unconfirmed int `json:"unconfirmed"`
	// Stuck counts the records still non-terminal past their deadline plus SweepGrace.
	Stuck int `json:"stuck"`
	// AuditBehind counts the records whose audit chain does not end at the record's state,
	// with neither an entry nor a gap entry for its last version.
	AuditBehind int `json:"audit_behind"`
	// AuditVerify is auditctl verify's verdict over the scenario's window: "ok", "ok (late: ...)"
	// or "broken: ...".
	AuditVerify string `json:"audit_verify"`
	// SecretsInLogs counts the log events holding a number or a code the load sent;
	// LogEventsScanned how many function log events were read.
	SecretsInLogs    int `json:"secrets_in_logs"`
	LogEventsScanned int `json:"log_events_scanned"`
	// Violations says what broke, one line each (no number, no code).
	Violations []string `json:"violations"`
}

// Count is the number of violations.
func (i Invariants) Count() int { return len(i.Violations) }

func (i *Invariants) violate(format string, args ...any) {
	i.Violations = append(i.Violations, fmt.Sprintf(format, args...))
}

type finalState struct {
	st       Status
	deadline time.Time
}

// CheckInvariants waits for every notification of sent to settle (terminal, or past its
// deadline plus SweepGrace) and for the audit trail to catch up, then checks the invariants over
// them and over the window [from, now).
// It is long because it checks the invariants in the order they depend on one another: the
// records settle, then their states, the providers' sends, the audit trail and the logs.
//
//revive:disable-next-line:function-length
func CheckInvariants(ctx context.Context, s *Stack, sent []*Sent, from time.Time, logf func(string, ...any)) Invariants {
	inv := Invariants{States: map[string]int{}}
	finals := map[string]finalState{}
	var last time.Time
	for _, e := range sent {
		if d := e.SubmittedAt.Add(2 * time.Minute); d.After(last) {
			last = d
		}
	}
	settle(ctx, s.Get, sent, finals, time.Now().Add(6*time.Minute), logf)
	now := time.Now()
	for _, e := range sent {
		f, ok := finals[e.Key]
		if !ok {
			if e.HTTP == http.StatusAccepted {
				inv.violate("%s: admitted (202) but its status cannot be read", e.EventID)
			}
			continue
		}
		inv.Notifications++
		inv.States[f.st.State]++
		if stuck(f.st.State, f.deadline, now) {
			inv.Stuck++
			inv.violate("%s: still %s %s after its dispatch deadline", e.EventID, f.st.State, now.Sub(f.deadline).Round(time.Second))
		}
	}

	sims, err := s.ReadSims(ctx)
	if err != nil {
		inv.violate("read the simulators: %v", err)
	}
	checkProviders(sent, finals, sims, &inv)
	checkAudit(ctx, s, sent, finals, from, &inv, logf)
	scanLogs(ctx, s, sent, from, &inv)
	return inv
}

// settle reads each notification of sent until it is final (terminal, or past its deadline and
// SweepGrace, whatever its state) or until by, keeping what it read in finals. It stops when ctx
// ends: a cancelled run reports what it read rather than reading on.
func settle(ctx context.Context, get func(context.Context, string) (Status, error), sent []*Sent, finals map[string]finalState, by time.Time, logf func(string, ...any)) {
	for pending := slices.Clone(sent); len(pending) > 0 && time.Now().Before(by) && ctx.Err() == nil; {
		var next []*Sent
		for _, e := range pending {
			st, err := get(ctx, e.Key)
			if err != nil {
				if e.HTTP != http.StatusAccepted {
					continue // refused before a record was written, or never answered
				}
				next = append(next, e)
				continue
			}
			dl, _ := time.Parse(time.RFC3339Nano, st.DispatchDeadline)
			finals[e.Key] = finalState{st, dl}
			if slices.Contains(nonTerminal, st.State) && time.Now().Before(dl.Add(SweepGrace)) {
				next = append(next, e)
			}
		}
		pending = next
		if len(pending) > 0 {
			logf("settling: %d notifications not final yet", len(pending))
			sleep(ctx, 10*time.Second)
		}
	}
}

// checkAudit checks that the audit chain of every record ends at its state (its last version has
// an entry, or a gap entry covers it), waiting up to 3 minutes for the stream to catch up, and
// that auditctl verify passes over [from, now].
func checkAudit(ctx context.Context, s *Stack, sent []*Sent, finals map[string]finalState, from time.Time, inv *Invariants, logf func(string, ...any)) {
	var behind []string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		chains, err := s.auditChains(ctx, from.Add(-time.Minute), time.Now().Add(time.Minute))
		if err != nil {
			inv.violate("audit export: %v", err)
			return
		}
		behind = behind[:0]
		for _, e := range sent {
			f, ok := finals[e.Key]
			if !ok {
				continue
			}
			// The record may have moved on since it was read (a receipt, a conversion): read it
			// again when its chain disagrees.
			c := chains[e.EventID]
			if c.last == f.st.State || c.gapAtEnd {
				continue
			}
			if st, err := s.Get(ctx, e.Key); err == nil && (st.State == c.last) {
				continue
			}
			behind = append(behind, e.EventID)
		}
		if len(behind) == 0 || time.Now().After(deadline) {
			break
		}
		logf("audit: %d records' chains not at their state yet", len(behind))
		sleep(ctx, 15*time.Second)
	}
	inv.AuditBehind = len(behind)
	for _, id := range behind {
		inv.violate("%s: audit chain does not reach the record's state (no entry, no gap)", id)
	}
	// Late is allowed (exit 0, a warning), broken is not (exit 1).
	out, err := s.auditctl(ctx, "verify", "--from", from.Add(-time.Minute).UTC().Format(time.RFC3339),
		"--to", time.Now().UTC().Format(time.RFC3339), "--key-id", s.DigestKey)
	if err != nil {
		inv.AuditVerify = "broken: " + lastLines(out, 5)
		inv.violate("auditctl verify over the window failed: %s", lastLines(out, 5))
		return
	}
	inv.AuditVerify = "passed"
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "OK:") {
			inv.AuditVerify = strings.TrimSpace(line)
		}
	}
	if strings.Contains(strings.ToLower(out), "late") {
		inv.AuditVerify += " (late digests reported)"
	}
}

type chain struct {
	last     string
	gapAtEnd bool
	versions int
}

// auditChains exports the audit entries written in [from, to) and returns, per event, the state
// its highest version reached.
func (s *Stack) auditChains(ctx context.Context, from, to time.Time) (map[string]chain, error) {
	out, err := s.auditctlStdout(ctx, "export", "--from", from.UTC().Format(time.RFC3339), "--to", to.UTC().Format(time.RFC3339), "--format", "csv")
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(strings.NewReader(out))
	r.FieldsPerRecord = -1
	header, err := r.Read()
	if err == io.EOF {
		return map[string]chain{}, nil
	}
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"event_id", "version", "to_state"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("export has no %s column (header %v)", need, header)
		}
	}
	top := map[string]int64{}
	chains := map[string]chain{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		ev, to := rec[col["event_id"]], rec[col["to_state"]]
		v, _ := strconv.ParseInt(rec[col["version"]], 10, 64)
		c := chains[ev]
		c.versions++
		if v >= top[ev] {
			top[ev] = v
			c.last = to
			c.gapAtEnd = to == "gap"
		}
		chains[ev] = c
	}
	return chains, nil
}

var (
	codeRe   = regexp.MustCompile(`GD[A-Z2-9]{8}`)
	numberRe = regexp.MustCompile(`1212\d{7}`)
)

// scanLogs reads every log event the stack's functions wrote since from (CloudWatch Logs in the
// emulator) and counts those holding a number or a code the loads sent.
func scanLogs(ctx context.Context, s *Stack, sent []*Sent, from time.Time, inv *Invariants) {
	secrets := map[string]bool{}
	for _, e := range sent {
		secrets[e.Code] = true
		secrets[strings.TrimPrefix(e.To, "+")] = true
	}
	groups, err := s.logGroups(ctx)
	if err != nil {
		inv.violate("list log groups: %v", err)
		return
	}
	for _, g := range groups {
		p := cloudwatchlogs.NewFilterLogEventsPaginator(s.Logs, &cloudwatchlogs.FilterLogEventsInput{
			LogGroupName: aws.String(g), StartTime: aws.Int64(from.Add(-time.Minute).UnixMilli()),
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				inv.violate("read log group %s: %v", g, err)
				break
			}
			for _, ev := range page.Events {
				inv.LogEventsScanned++
				msg := aws.ToString(ev.Message)
				leak := false
				for _, m := range codeRe.FindAllString(msg, -1) {
					leak = leak || secrets[m]
				}
				for _, m := range numberRe.FindAllString(msg, -1) {
					leak = leak || secrets[m]
				}
				if leak {
					inv.SecretsInLogs++
				}
			}
		}
	}
	if inv.SecretsInLogs > 0 {
		inv.violate("%d log events hold a number or a code the load sent", inv.SecretsInLogs)
	}
	if inv.LogEventsScanned == 0 {
		inv.violate("no function log event to scan since %s: the secrets check saw nothing", from.Format(time.RFC3339))
	}
}

// logGroups lists the emulator's log groups.
func (s *Stack) logGroups(ctx context.Context) ([]string, error) {
	var out []string
	p := cloudwatchlogs.NewDescribeLogGroupsPaginator(s.Logs, &cloudwatchlogs.DescribeLogGroupsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, g := range page.LogGroups {
			out = append(out, aws.ToString(g.LogGroupName))
		}
	}
	return out, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// checkProviders checks the providers' own records (every simulator of the chain) against the
// notifications: none accepted more than once, no send request at or after the earlier of the
// stack's deadline and the load's own expires_at, and every record the stack says was sent
// (sent or delivered) accepted by a provider (liveness: a state no provider confirms is a lie).
func checkProviders(sent []*Sent, finals map[string]finalState, sims SimState, inv *Invariants) {
	// Each attempt's client_ref is "<notification ID>-a<attempt>": the messages and requests are
	// matched to notifications by it, not by number (two notifications may share a number).
	byID := map[string]*Sent{}
	for _, e := range sent {
		if f, ok := finals[e.Key]; ok && f.st.NotificationID != "" {
			byID[f.st.NotificationID] = e
		}
	}
	for id, n := range sims.AcceptedByNotification {
		if e := byID[id]; e != nil && n > 1 {
			inv.DoubleSends += n - 1
			inv.violate("%s: %d messages accepted by the chain's providers, want at most 1", e.EventID, n)
		}
	}
	for _, r := range sims.Requests {
		e := byID[NotificationOfRef(r.ClientRef)]
		if e == nil {
			continue
		}
		// The earlier of the stack's dispatch deadline and the load's own expires_at: a stack
		// that reported a later deadline than it was asked for cannot hide a late send.
		deadline := finals[e.Key].deadline
		if !e.ExpiresAt.IsZero() && (deadline.IsZero() || e.ExpiresAt.Before(deadline)) {
			deadline = e.ExpiresAt
		}
		if deadline.IsZero() {
			continue
		}
		if !r.At.Before(deadline) {
			inv.LateSends++
			inv.violate("%s: send request at %s, %s after its deadline", e.EventID, r.At.Format(time.RFC3339), r.At.Sub(deadline))
		}
	}

	for id, e := range byID {
		if st := finals[e.Key].st.State; (st == "sent" || st == "delivered") && sims.AcceptedByNotification[id] == 0 {
			inv.Unconfirmed++
			inv.violate("%s: %s, but no provider of the chain accepted a message for it", e.EventID, st)
		}
	}
}

// stuck says a record in state, with its dispatch deadline, is still non-terminal at now past
// its deadline plus SweepGrace.
func stuck(state string, deadline, now time.Time) bool {
	return slices.Contains(nonTerminal, state) && now.After(deadline.Add(SweepGrace))
}
