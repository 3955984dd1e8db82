package gameday

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"sync"
	"time"
)

// Sent is one notification the load submitted.
type Sent struct {
	Key, EventID string
	// To and Code are the secrets of the request: the log scan looks for them.
	To, Code    string
	SubmittedAt time.Time
	// ExpiresAt is the expires_at the load sent: the runner's own deadline, not the stack's.
	ExpiresAt time.Time
	// HTTP is the API's answer to the POST (0: no answer).
	HTTP int
	// Convert says the load reports the code as used once it is sent (a real user resetting
	// a password); Converted that it did.
	Convert, Converted bool
}

// Load submits notifications at a steady rate until its context ends.
type Load struct {
	s *Stack
	// Name tags the event IDs (one load per scenario and kind).
	Name string
	// Rate is requests per second.
	Rate float64
	// DeadlineIn is how far after submission each dispatch deadline lies.
	DeadlineIn time.Duration
	// Number returns a fresh destination.
	Number func() string
	// ConvertShare is the share of sends whose code the load reports as used.
	ConvertShare float64

	mu   sync.Mutex
	sent []*Sent
	seq  int
}

// NewLoad returns a load of rate requests per second on s: fresh New York numbers outside the
// pumping scenario's prefix, 3-minute deadlines, 90 % of the codes used.
func NewLoad(s *Stack, name string, rate float64) *Load {
	return &Load{s: s, Name: name, Rate: rate, DeadlineIn: 3 * time.Minute, Number: NormalNumber, ConvertShare: 0.9}
}

// NormalNumber is a random New York number (+1 212, exchanges 200-999) outside the pumping
// scenarios' prefixes (+1 212 55 and 56), never returned before by this process: each
// notification of a game day has a destination of its own.
func NormalNumber() string {
	for {
		n := 2_000_000 + randInt(8_000_000)
		if n/100_000 != 55 && n/100_000 != 56 {
			if to := fmt.Sprintf("+1212%07d", n); fresh(to) {
				return to
			}
		}
	}
}

var used sync.Map

// fresh says to was never handed out before, and marks it.
func fresh(to string) bool {
	_, seen := used.LoadOrStore(to, true)
	return !seen
}

// PumpPrefix is the number range the pumping scenario attacks ("+1 212 55", the
// GuardPrefixDigits=6 prefix 121255); no other load sends to it, since its block outlives the
// scenario.
const PumpPrefix = "+121255"

func randInt(n int64) int64 {
	v, err := rand.Int(rand.Reader, big.NewInt(n))
	if err != nil {
		panic(err)
	}
	return v.Int64()
}

// code is a fresh one-time code: unique enough that finding it in a log is no coincidence.
func code() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 10)
	b[0], b[1] = 'G', 'D'
	for i := 2; i < len(b); i++ {
		b[i] = alphabet[randInt(int64(len(alphabet)))]
	}
	return string(b)
}

// Run submits until ctx ends, then waits for the requests in flight.
func (l *Load) Run(ctx context.Context) {
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Duration(float64(time.Second) / l.Rate))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-tick.C:
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.Submit(context.WithoutCancel(ctx), l.Number())
			}()
		}
	}
}

// RunCount submits n requests, the i-th at start + i/Rate (a schedule, not a ticker, which drops
// ticks on a loaded machine), then waits for them all.
func (l *Load) RunCount(ctx context.Context, n int) {
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		sleep(ctx, time.Until(start.Add(time.Duration(float64(i)*float64(time.Second)/l.Rate))))
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Submit(context.WithoutCancel(ctx), l.Number())
		}()
	}
	wg.Wait()
}

// Submit sends one notification to to and records it.
func (l *Load) Submit(ctx context.Context, to string) *Sent {
	l.mu.Lock()
	l.seq++
	seq := l.seq
	l.mu.Unlock()
	e := &Sent{
		EventID: fmt.Sprintf("gd-%s-%s-%d", l.s.RunID, l.Name, seq), To: to, Code: code(),
		SubmittedAt: time.Now().UTC(), Convert: float64(randInt(1000))/1000 < l.ConvertShare,
	}
	e.Key = e.EventID + ":sms:password_reset"
	e.ExpiresAt = e.SubmittedAt.Add(l.DeadlineIn + l.s.margin)
	body, _ := json.Marshal(map[string]any{
		"event_id": e.EventID, "channel": "sms", "purpose": "password_reset", "to": to, "locale": "en",
		"params":     map[string]string{"code": e.Code},
		"expires_at": e.ExpiresAt.Format(time.RFC3339Nano),
	})
	if r, err := l.s.Call(ctx, http.MethodPost, "/v1/notifications", body); err == nil {
		e.HTTP = r.Code
	}
	l.mu.Lock()
	l.sent = append(l.sent, e)
	l.mu.Unlock()
	return e
}

// Sent returns what the load submitted so far.
func (l *Load) Sent() []*Sent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Sent(nil), l.sent...)
}

// ConvertLoop reports, every few seconds until ctx ends, the conversions of the sends that
// reached sent or delivered.
func (l *Load) ConvertLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(3 * time.Second):
		}
		for _, e := range l.Sent() {
			if ctx.Err() != nil {
				return
			}
			if !e.Convert || e.Converted || e.HTTP != http.StatusAccepted || time.Since(e.SubmittedAt) > 2*time.Minute {
				continue
			}
			st, err := l.s.Get(ctx, e.Key)
			if err != nil || (st.State != "sent" && st.State != "delivered") {
				continue
			}
			r, err := l.s.Call(ctx, http.MethodPost, "/v1/notifications/"+e.Key+"/conversion", nil)
			if err == nil && r.Code == http.StatusOK {
				l.mu.Lock()
				e.Converted = true
				l.mu.Unlock()
			}
		}
	}
}
