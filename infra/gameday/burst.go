package gameday

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"time"
)

// Burst sizes: at least BurstMin requests, all submitted within BurstWithin.
const (
	BurstRate   = 75.0
	BurstCount  = 2025 // 27 s at BurstRate
	BurstMin    = 2000
	BurstWithin = 30 * time.Second
	// burstDeadline is each burst request's deadline, from its submission.
	burstDeadline = 10 * time.Minute
)

// Burst is 2,000 resets in under 30 s beside the steady load: every one must be admitted and
// accepted by exactly one provider once, before its deadline, with no alarm firing. It is
// what the stack and the machinery around it (the EMF bridge, the platform patch's metrics, the
// fault proxy) must carry without starving one another.
func Burst() Scenario {
	var atLoad string
	return Scenario{
		Name:  "burst",
		Takes: 14 * time.Minute,
		Proves: "a burst of 2,000 resets in 27 s (75 a second, 10-minute deadlines) beside the steady load: every one admitted, " +
			"accepted by exactly one provider once before its deadline (the providers' own records), and no alarm fires.",
		Hold: BurstWithin, Rate: 1,
		MinFaults: map[string]int64{"burst-requests": BurstMin},
		During: func(ctx context.Context, x *Exec) {
			atLoad = emulatorCPU(ctx)
			l := NewLoad(x.S, x.Scenario.Name+"-burst", BurstRate)
			l.DeadlineIn, l.Number = burstDeadline, BurstNumber
			x.AddLoad(l)
			x.mu.Lock()
			x.burst = l
			x.mu.Unlock()
			l.RunCount(context.WithoutCancel(ctx), BurstCount)
			x.CountFault("burst-requests", int64(len(l.Sent())))
		},
		Check: func(ctx context.Context, x *Exec) []string {
			v := checkBurst(ctx, x)
			x.Run.Logf("burst: the emulator's process used %s of a core at the steady load before the burst, %s idle after it", atLoad, emulatorCPU(ctx))
			return v
		},
	}
}

// emulatorCPU is the share of a core the emulator's process (RESETNOTIFY_EMULATOR_PID, which
// infra/emulator/emulator.sh exports) used over the next 20 s, or why it is unknown.
func emulatorCPU(ctx context.Context) string {
	pid, err := strconv.Atoi(os.Getenv("RESETNOTIFY_EMULATOR_PID"))
	if err != nil {
		return "unknown (no RESETNOTIFY_EMULATOR_PID)"
	}
	share, err := CPUShare(ctx, pid, 20*time.Second)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return fmt.Sprintf("%.0f %%", 100*share)
}

// checkBurst reads each burst request's final status and the providers' records, and returns
// what breaks the burst's promise.
func checkBurst(ctx context.Context, x *Exec) []string {
	x.mu.Lock()
	l := x.burst
	x.mu.Unlock()
	if l == nil {
		return []string{"burst: no burst load ran"}
	}
	sent := l.Sent()
	finals := map[string]Status{}
	for _, e := range sent {
		if st, err := x.S.Get(ctx, e.Key); err == nil {
			finals[e.Key] = st
		}
	}
	sims, err := x.S.ReadSims(ctx)
	if err != nil {
		return []string{"burst: read the simulators: " + err.Error()}
	}
	f := BurstFigures(sent, finals, sims)
	x.Run.Logf("burst: %d submitted over %.1f s, %d answered 202, %d ended sent or delivered, %d accepted once, %d sent late",
		f.Submitted, f.SubmitSeconds, f.Answered, f.Delivered, f.Once, f.Late)
	return BurstViolations(sent, finals, sims)
}

// BurstFigure are a burst's counts for the log: the requests submitted and over how long, those
// answered 202, those ending sent or delivered, those the providers accepted exactly once, and
// the send requests at or after the deadline the load asked for.
type BurstFigure struct {
	Submitted, Answered, Delivered, Once, Late int
	SubmitSeconds                              float64
}

// BurstFigures counts what BurstViolations judges.
func BurstFigures(sent []*Sent, finals map[string]Status, sims SimState) BurstFigure {
	f := BurstFigure{Submitted: len(sent)}
	byID := map[string]*Sent{}
	var first, last time.Time
	for i, e := range sent {
		if i == 0 || e.SubmittedAt.Before(first) {
			first = e.SubmittedAt
		}
		last = maxTime(last, e.SubmittedAt)
		if e.HTTP == http.StatusAccepted {
			f.Answered++
		}
		st := finals[e.Key]
		if st.State == "sent" || st.State == "delivered" {
			f.Delivered++
		}
		if st.NotificationID != "" {
			byID[st.NotificationID] = e
			if sims.AcceptedByNotification[st.NotificationID] == 1 {
				f.Once++
			}
		}
	}
	f.SubmitSeconds = last.Sub(first).Seconds()
	for _, r := range sims.Requests {
		if e := byID[NotificationOfRef(r.ClientRef)]; e != nil && !e.ExpiresAt.IsZero() && !r.At.Before(e.ExpiresAt) {
			f.Late++
		}
	}
	return f
}

// BurstViolations judges a burst from outside: at least BurstMin requests submitted within
// BurstWithin, each answered 202, each ending sent or delivered, each accepted by the chain's
// providers exactly once, and every send request of it before the deadline the load itself
// asked for (not the one the stack reports).
func BurstViolations(sent []*Sent, finals map[string]Status, sims SimState) []string {
	var out []string
	if len(sent) < BurstMin {
		out = append(out, fmt.Sprintf("burst: %d requests submitted, want at least %d", len(sent), BurstMin))
	}
	if len(sent) > 0 {
		first, last := sent[0].SubmittedAt, sent[0].SubmittedAt
		for _, e := range sent {
			first, last = minTime(first, e.SubmittedAt), maxTime(last, e.SubmittedAt)
		}
		if span := last.Sub(first); span >= BurstWithin {
			out = append(out, fmt.Sprintf("burst: submitted over %s, want under %s", span.Round(time.Millisecond), BurstWithin))
		}
	}
	byID := map[string]*Sent{}
	counts := map[string]int{}
	for _, e := range sent {
		st, ok := finals[e.Key]
		switch {
		case e.HTTP != http.StatusAccepted:
			counts[fmt.Sprintf("answered %d", e.HTTP)]++
		case !ok:
			counts["status unreadable"]++
		case st.State != "sent" && st.State != "delivered":
			counts["ended "+st.State]++
		case sims.AcceptedByNotification[st.NotificationID] != 1:
			counts[fmt.Sprintf("accepted %d times by the providers", sims.AcceptedByNotification[st.NotificationID])]++
		}
		if ok && st.NotificationID != "" {
			byID[st.NotificationID] = e
		}
	}
	for _, r := range sims.Requests {
		if e := byID[NotificationOfRef(r.ClientRef)]; e != nil && !e.ExpiresAt.IsZero() && !r.At.Before(e.ExpiresAt) {
			counts["sent at or after the deadline the load asked for"]++
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, fmt.Sprintf("burst: %d of %d requests %s", counts[k], len(sent), k))
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// burstAreaCodes are US area codes the burst spreads its destinations over.
var burstAreaCodes = []string{"201", "202", "206", "213", "214", "305", "310", "312", "404", "415", "503", "602", "617",
	"702", "713", "718", "773", "917", "973", "516", "631", "914", "646", "347", "929", "212"}

// BurstNumber is a fresh US number spread over burstAreaCodes and exchanges 200-999: about one
// destination per 6-digit prefix, so that 2,000 resets in 27 s are a burst of real users, not
// the pumping the prefix guard (GuardPrefixPerMinute, 20) refuses, as the first burst run showed
// (of 1,932 requests over +1 212 alone, 113 sends reached a provider). Never the pumping prefixes.
func BurstNumber() string {
	for {
		area := burstAreaCodes[randInt(int64(len(burstAreaCodes)))]
		n := 2_000_000 + randInt(8_000_000)
		if area == "212" && (n/100_000 == 55 || n/100_000 == 56) {
			continue
		}
		if to := fmt.Sprintf("+1%s%07d", area, n); fresh(to) {
			return to
		}
	}
}
