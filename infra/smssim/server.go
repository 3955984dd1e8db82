package smssim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// Limits on a send request (see simapi).
const (
	MaxBodyBytes       = simapi.MaxBodyBytes
	MaxClientRefLen    = simapi.MaxClientRefLen
	MaxValiditySeconds = simapi.MaxValiditySeconds
)

// Defaults for the zero Config fields.
const (
	DefaultLatency    = 100 * time.Millisecond
	DefaultHang       = 2 * time.Minute
	DefaultRetryAfter = time.Second
)

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{6,14}$`)

// Config configures a Server. The zero value accepts everything at once.
type Config struct {
	// Seed seeds the per-destination generators of Mix.
	Seed int64
	// Mix is the random choice of modes for destinations no fault or rule covers.
	Mix Mix
	// Rules choose a mode by the destination number's last digits.
	Rules []Rule
	// Latency is how long ModeLatency waits before accepting (default 100ms).
	Latency time.Duration
	// Hang bounds how long the timeout modes hang when the client does not give up
	// (default 2m); then the connection is closed.
	Hang time.Duration
	// RetryAfter is sent with 429 and 503, in whole seconds, at least 1 (default 1s).
	RetryAfter time.Duration
	// Visibility is how long after acceptance a message stays invisible to lookups.
	Visibility time.Duration
	// DeliveryDelay is how long after acceptance the carrier delivers (and receipts are
	// sent); a validity period shorter than it lapses.
	DeliveryDelay time.Duration
	// WebhookURL receives delivery receipts when set.
	WebhookURL string
	// WebhookToken, when set, is sent with every receipt in the simapi.WebhookTokenHeader
	// header, so that the receiver can tell the simulator's receipts from anyone else's.
	WebhookToken string
	// Token, when set, is the bearer token /messages requires.
	Token string
	// Clock tells the time (default the system clock).
	Clock notify.Clock
	// Logger receives one line per request (default: discard).
	Logger *slog.Logger
	// HTTPClient posts receipts (default: a client with a 5s timeout).
	HTTPClient *http.Client
	// Provider is the provider name the simulator stands in for, stamped on its receipts and
	// message IDs (default "simulator"). "simulator2" is the second-provider mode: a second
	// simulator, with faults of its own, that the provider chain reaches as its own provider.
	Provider string
	// TwilioAccountSID and TwilioAuthToken are the account the Twilio mode (Provider
	// "twilio") stands in for: its API lives under the account SID and its status callbacks
	// are signed with the token. TwilioAPIKeySID and TwilioAPIKeySecret are the API key its
	// API requires (HTTP basic): stricter than Twilio, which also takes the account SID and
	// auth token, so that a client sending with the token is refused.
	TwilioAccountSID   string
	TwilioAuthToken    string
	TwilioAPIKeySID    string
	TwilioAPIKeySecret string
	// ListLag is how long after acceptance a message stays out of the Twilio mode's message
	// list (its lookup by SID sees it at once), as Twilio's eventually consistent list does.
	ListLag time.Duration
}

// LookupMode makes lookups fail, to test reconciliation's inconclusive path.
type LookupMode string

// The lookup modes.
const (
	LookupNormal      LookupMode = "normal"
	LookupUnavailable LookupMode = "unavailable"
	LookupError       LookupMode = "error"
	LookupTimeout     LookupMode = "timeout"
)

// Message is one accepted message, as the in-process Go API reports it.
type Message struct {
	MessageID  string
	ClientRef  string
	To         string
	Body       string
	Mode       Mode
	AcceptedAt time.Time
	Validity   time.Duration
	// DeliverAt is AcceptedAt + Config.DeliveryDelay: when the carrier delivers, or drops it.
	DeliverAt time.Time
	// Lapsed means the validity period ran out before DeliverAt: the carrier dropped it.
	Lapsed bool
	// Receipt is the final status the message reaches at DeliverAt.
	Receipt simapi.Status
	// Feedback is the last feedback reported for the message (simapi.FeedbackReceived): its
	// code or link was used.
	Feedback string
}

// ValidUntil is when the message's validity period ends.
func (m Message) ValidUntil() time.Time { return m.AcceptedAt.Add(m.Validity) }

type fault struct {
	modes   []Mode
	receipt simapi.Status
}

// Server is the simulator. It is an http.Handler, safe for concurrent requests; use it with
// httptest.NewServer (call Close before the httptest server's Close, so that hanging
// requests end) or Start.
type Server struct {
	cfg   Config
	clock notify.Clock
	log   *slog.Logger
	hc    *http.Client
	mux   *http.ServeMux

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // receipts in flight

	mu         sync.Mutex
	closed     bool
	seq        int
	faults     map[string]*fault
	rngs       map[string]*rand.Rand
	messages   []*Message
	byID       map[string]*Message
	byRef      map[string][]*Message
	requests   []*simapi.RequestEntry
	lookupMode LookupMode
	timers     map[*time.Timer]struct{}
	// callbacks holds each Twilio attempt's StatusCallback URL, by client reference.
	callbacks map[string]string

	httpSrv *http.Server
	url     string

	// sendMu guards send, the second address (StartSendPort), which can refuse connections.
	sendMu sync.Mutex
	send   *sendPort
}

// New returns a simulator with cfg.
func New(cfg Config) *Server {
	if cfg.Latency <= 0 {
		cfg.Latency = DefaultLatency
	}
	if cfg.Hang <= 0 {
		cfg.Hang = DefaultHang
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.Provider == "" {
		cfg.Provider = simapi.DefaultProvider
	}
	s := &Server{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, hc: cfg.HTTPClient}
	if s.clock == nil {
		s.clock = notify.SystemClock{}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.hc == nil {
		s.hc = &http.Client{Timeout: 5 * time.Second}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.reset()
	s.lookupMode = LookupNormal
	s.timers = map[*time.Timer]struct{}{}

	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /messages", s.handleSend)
	s.mux.HandleFunc("GET /messages", s.handleList)
	s.mux.HandleFunc("GET /messages/{id}", s.handleGet)
	s.mux.HandleFunc("POST /messages/{id}/feedback", s.handleFeedback)
	s.mux.HandleFunc("GET /inbox", s.handleInbox)
	s.mux.HandleFunc("GET /requests", s.handleRequests)
	s.mux.HandleFunc("POST /control/faults", s.handleSetFault)
	s.mux.HandleFunc("DELETE /control/faults", s.handleClearFaults)
	s.mux.HandleFunc("POST /control/lookup", s.handleLookupFault)
	s.mux.HandleFunc("POST /control/reset", s.handleReset)
	s.mux.HandleFunc("POST /control/connections", s.handleConnections)
	if cfg.Provider == ProviderTwilio {
		s.twilioRoutes()
	}
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return s
}

// ServeHTTP serves the simulator's API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background. It returns the
// base URL.
func (s *Server) Start(addr string) (string, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("smssim.start %s: %w", addr, err)
	}
	s.mu.Lock()
	s.httpSrv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + l.Addr().String()
	srv := s.httpSrv
	s.mu.Unlock()
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("smssim.serve", "err", err)
		}
	}()
	return s.url, nil
}

// URL returns the base URL after Start, or "".
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Close ends hanging requests, cancels pending receipts, waits for receipts in flight and
// stops the listeners that Start and StartSendPort opened. It is safe to call more than once.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.cancel()
	for t := range s.timers {
		if t.Stop() {
			s.wg.Done()
		}
	}
	clear(s.timers)
	srv := s.httpSrv
	s.mu.Unlock()
	err := s.closeSendPort()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := srv.Shutdown(ctx); serr != nil {
			err = errors.Join(err, serr, srv.Close())
		}
	}
	s.wg.Wait()
	return err
}

// SetFault scripts the modes of the next requests to to: one mode per request, the last one
// staying in force. No modes removes the script.
func (s *Server) SetFault(to string, modes ...Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faultFor(to)
	f.modes = slices.Clone(modes)
	if len(f.modes) == 0 && f.receipt == "" {
		delete(s.faults, to)
	}
}

// SetReceipt makes every message later accepted for to end with status (delivered or
// undelivered). An empty status restores the default.
func (s *Server) SetReceipt(to string, status simapi.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faultFor(to)
	f.receipt = status
	if len(f.modes) == 0 && f.receipt == "" {
		delete(s.faults, to)
	}
}

func (s *Server) faultFor(to string) *fault {
	f, ok := s.faults[to]
	if !ok {
		f = &fault{}
		s.faults[to] = f
	}
	return f
}

// ClearFaults forgets every scripted fault and receipt.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.faults)
}

// SetLookupMode makes lookups answer normally or fail.
func (s *Server) SetLookupMode(m LookupMode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookupMode = m
}

// Reset forgets every message, request and fault, and restarts the random generators.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *Server) reset() {
	s.faults = map[string]*fault{}
	s.rngs = map[string]*rand.Rand{}
	s.messages = nil
	s.byID = map[string]*Message{}
	s.byRef = map[string][]*Message{}
	s.requests = nil
	s.lookupMode = LookupNormal
	s.callbacks = map[string]string{}
}

// Messages returns every accepted message, in the order they were accepted.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, len(s.messages))
	for i, m := range s.messages {
		out[i] = *m
	}
	return out
}

// Inbox returns the accepted messages per destination, each in acceptance order.
func (s *Server) Inbox() map[string][]Message {
	out := map[string][]Message{}
	for _, m := range s.Messages() {
		out[m.To] = append(out[m.To], m)
	}
	return out
}

// Accepted returns the messages accepted for to, in acceptance order.
func (s *Server) Accepted(to string) []Message { return s.Inbox()[to] }

// Requests returns every send request and what the simulator did with it, in arrival order.
func (s *Server) Requests() []simapi.RequestEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]simapi.RequestEntry, len(s.requests))
	for i, e := range s.requests {
		out[i] = *e
	}
	return out
}

// decide chooses the mode of the next request to to.
func (s *Server) decide(to string) (Mode, simapi.Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var receipt simapi.Status
	if f, ok := s.faults[to]; ok {
		receipt = f.receipt
		if len(f.modes) > 0 {
			m := f.modes[0]
			if len(f.modes) > 1 {
				f.modes = f.modes[1:]
			}
			return m, receipt
		}
	}
	for _, r := range s.cfg.Rules {
		if len(to) >= len(r.Suffix) && to[len(to)-len(r.Suffix):] == r.Suffix {
			return r.Mode, receipt
		}
	}
	if len(s.cfg.Mix) == 0 {
		return ModeAccept, receipt
	}
	rng, ok := s.rngs[to]
	if !ok {
		h := fnv.New64a()
		_, _ = io.WriteString(h, to) // a hash never fails to write
		rng = rand.New(rand.NewPCG(uint64(s.cfg.Seed), h.Sum64()))
		s.rngs[to] = rng
	}
	return s.cfg.Mix.pick(rng), receipt
}

// logRequest appends e to the request log and returns the logged entry, which the handler
// completes under the lock (a Reset meanwhile only orphans it).
func (s *Server) logRequest(e simapi.RequestEntry) *simapi.RequestEntry {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.Seq = len(s.requests) + 1
	s.requests = append(s.requests, &e)
	return &e
}

// finish completes the request log entry e and logs it.
func (s *Server) finish(e *simapi.RequestEntry, status int, note string) {
	s.mu.Lock()
	e.HTTPStatus, e.Note = status, note
	entry := *e
	s.mu.Unlock()
	s.log.Info("smssim.send", "seq", entry.Seq, "client_ref", entry.ClientRef, "mode", entry.Mode,
		"recorded", entry.Recorded, "message_id", entry.MessageID, "status", entry.HTTPStatus, "note", entry.Note)
}

// record accepts req into the inbox and schedules its receipt.
func (s *Server) record(e *simapi.RequestEntry, req simapi.SendRequest, mode Mode, receipt simapi.Status) *Message {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	m := &Message{
		MessageID:  s.messageID(),
		ClientRef:  req.ClientRef,
		To:         req.To,
		Body:       req.Body,
		Mode:       mode,
		AcceptedAt: now,
		Validity:   time.Duration(req.ValiditySeconds) * time.Second,
		DeliverAt:  now.Add(s.cfg.DeliveryDelay),
		Receipt:    simapi.StatusDelivered,
	}
	m.Lapsed = s.cfg.DeliveryDelay > m.Validity
	if m.Lapsed || receipt == simapi.StatusUndelivered {
		m.Receipt = simapi.StatusUndelivered
	}
	if receipt == simapi.StatusSilent {
		m.Receipt = simapi.StatusAccepted
	}
	s.messages = append(s.messages, m)
	s.byID[m.MessageID] = m
	s.byRef[m.ClientRef] = append(s.byRef[m.ClientRef], m)
	e.Recorded, e.MessageID = true, m.MessageID
	if s.closed || m.Receipt == simapi.StatusAccepted {
		return m
	}
	if cb := s.callbacks[m.ClientRef]; s.cfg.Provider == ProviderTwilio && cb != "" {
		msg := *m
		s.after(s.cfg.DeliveryDelay, func() { s.postTwilioCallback(cb, msg) })
	} else if s.cfg.WebhookURL != "" {
		rc := receiptOf(*m, s.cfg.Provider)
		s.after(s.cfg.DeliveryDelay, func() { s.postReceipt(rc) })
	}
	return m
}

// after runs f after d, unless Close comes first, which waits for it once it runs. Call with
// s.mu held.
func (s *Server) after(d time.Duration, f func()) {
	s.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer s.wg.Done()
		s.mu.Lock()
		delete(s.timers, t)
		s.mu.Unlock()
		f()
	})
	s.timers[t] = struct{}{}
}

// messageID returns the ID of the message numbered s.seq: sim-<n> for the first provider,
// <provider>-<n> in the second-provider mode. Call with s.mu held.
func (s *Server) messageID() string {
	if s.cfg.Provider == ProviderTwilio {
		return fmt.Sprintf("SM%032x", s.seq)
	}
	if s.cfg.Provider == simapi.DefaultProvider {
		return fmt.Sprintf("sim-%08d", s.seq)
	}
	return fmt.Sprintf("%s-%08d", s.cfg.Provider, s.seq)
}

// receiptOf returns m's receipt as provider sends it.
func receiptOf(m Message, provider string) simapi.Receipt {
	rc := simapi.Receipt{MessageID: m.MessageID, ClientRef: m.ClientRef, Status: m.Receipt, At: m.DeliverAt, Provider: provider}
	switch {
	case m.Lapsed:
		rc.Reason = simapi.ReasonValidityExpired
	case m.Receipt == simapi.StatusUndelivered:
		rc.Reason = simapi.ReasonCarrierFailed
	}
	return rc
}

// postReceipt posts rc to the webhook, trying three times.
func (s *Server) postReceipt(rc simapi.Receipt) {
	body, _ := json.Marshal(rc)
	for try := 1; try <= 3; try++ {
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, s.cfg.WebhookURL, bytesReader(body))
		if err != nil {
			s.log.Error("smssim.receipt", "message_id", rc.MessageID, "err", err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		if s.cfg.WebhookToken != "" {
			req.Header.Set(simapi.WebhookTokenHeader, s.cfg.WebhookToken)
		}
		resp, err := s.hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode < 300 {
				s.log.Info("smssim.receipt", "message_id", rc.MessageID, "client_ref", rc.ClientRef, "status", rc.Status)
				return
			}
			err = fmt.Errorf("webhook answered %d", resp.StatusCode)
		}
		s.log.Warn("smssim.receipt", "message_id", rc.MessageID, "try", try, "err", err)
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Duration(try) * 200 * time.Millisecond):
		}
	}
}

// visible reports whether m can be seen by a lookup at now.
func (s *Server) visible(m *Message, now time.Time) bool {
	return !now.Before(m.AcceptedAt.Add(s.cfg.Visibility))
}

// view returns the lookup view of m at now.
func view(m Message, now time.Time) simapi.Message {
	v := simapi.Message{
		MessageID:       m.MessageID,
		ClientRef:       m.ClientRef,
		Status:          simapi.StatusAccepted,
		AcceptedAt:      m.AcceptedAt,
		ValiditySeconds: int64(m.Validity / time.Second),
		Feedback:        m.Feedback,
	}
	if !now.Before(m.DeliverAt) && m.Receipt != simapi.StatusAccepted {
		rc := receiptOf(m, "")
		v.Status, v.Reason = rc.Status, rc.Reason
		at := m.DeliverAt
		v.FinalAt = &at
	}
	return v
}

func retryAfterSeconds(d time.Duration) string {
	return strconv.FormatInt(max(int64((d+time.Second-1)/time.Second), 1), 10)
}
