package faultproxy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configures New. The zero value is ready to use.
type Options struct {
	// Logger receives a line per fault injected (service, operation, kind, function; never a
	// body). Nil means slog.Default().
	Logger *slog.Logger
	// Seed seeds the rate rolls; 0 means a random seed.
	Seed uint64
}

// Proxy is the fault-injecting reverse proxy: an http.Handler that forwards every request to
// its upstream, except as its rules say, and serves the control API under ControlPrefix.
// Serve it with the *http.Server that Server returns, which lets it attribute connections to
// processes. It is safe for concurrent use.
type Proxy struct {
	upstream *url.URL
	client   *http.Client
	log      *slog.Logger

	mu        sync.Mutex
	rng       *rand.Rand
	rules     []*active
	requests  map[opKey]int64
	forwarded map[opKey]int64
	faults    map[faultKey]int64

	// Hooks the tests replace.
	now       func() time.Time
	attribute func(client, server net.Addr) (pid int, function string, err error)
	kill      func(pid int, function string) error
	// others returns the pids of function's processes other than pid (KindKill's All).
	others func(pid int, function string) ([]int, error)
}

// active is a rule in force: when it ends, and how often it was applied.
type active struct {
	Rule
	until   time.Time
	applied int
}

type opKey struct{ service, operation string }

type faultKey struct {
	service, operation string
	kind               Kind
	function           string
}

// New returns a Proxy that forwards to upstream (e.g. MiniStack's http://127.0.0.1:4566).
func New(upstream string, o Options) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("faultproxy: upstream %q is no http(s) URL", upstream)
	}
	seed := o.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Proxy{
		upstream: u,
		// No proxy from the environment, no compression of our own, no redirects followed:
		// the caller sees the emulator's answer as it was.
		client: &http.Client{
			Transport: &http.Transport{Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 64,
				DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
			// Longer than any AWS call the functions make (SQS long polls are 20 s at most).
			Timeout: 2 * time.Minute,
		},
		log:       cmp.Or(o.Logger, slog.Default()),
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		requests:  map[opKey]int64{},
		forwarded: map[opKey]int64{},
		faults:    map[faultKey]int64{},
		now:       time.Now,
		attribute: attributeConn,
		kill:      killProcess,
		others:    processesOf,
	}, nil
}

// Server returns an *http.Server serving p whose connections p can attribute to the processes
// that opened them (ConnContext).
func (p *Proxy) Server() *http.Server {
	return &http.Server{Handler: p, ConnContext: ConnContext, ReadHeaderTimeout: 30 * time.Second}
}

// connKey is the context key of a connection's *connInfo.
type connKey struct{}

// connInfo caches, for one connection, the process that opened it.
type connInfo struct {
	conn     net.Conn
	once     sync.Once
	pid      int
	function string
	err      error
}

// ConnContext is the http.Server hook that lets a Proxy attribute a connection once, however
// many requests it carries (Server sets it).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, &connInfo{conn: c})
}

// attributeConn finds the process and Lambda function at the client end of a connection.
func attributeConn(client, server net.Addr) (int, string, error) {
	ca, ok1 := addrPort(client)
	sa, ok2 := addrPort(server)
	if !ok1 || !ok2 {
		return 0, "", fmt.Errorf("addresses %v, %v", client, server)
	}
	pid, err := processOf(ca, sa)
	if err != nil {
		return 0, "", err
	}
	fn, err := functionOf(pid)
	return pid, fn, err
}

// processOfRequest returns the pid and Lambda function of the process that sent r.
func (p *Proxy) processOfRequest(r *http.Request) (int, string, error) {
	if ci, ok := r.Context().Value(connKey{}).(*connInfo); ok {
		ci.once.Do(func() { ci.pid, ci.function, ci.err = p.attribute(ci.conn.RemoteAddr(), ci.conn.LocalAddr()) })
		return ci.pid, ci.function, ci.err
	}
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	remote, err := net.ResolveTCPAddr("tcp", r.RemoteAddr)
	if local == nil || err != nil {
		return 0, "", errors.New("the connection's addresses are unknown")
	}
	return p.attribute(remote, local)
}

// ServeHTTP serves the control API under ControlPrefix and forwards everything else.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, ControlPrefix) {
		p.control(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "faultproxy: reading the request: "+err.Error(), http.StatusBadRequest)
		return
	}
	c := identify(r, body)
	p.mu.Lock()
	p.requests[opKey{c.service, c.operation}]++
	p.mu.Unlock()
	pl := p.choose(r, c)
	if pl.empty() {
		p.relay(w, r, c)
		return
	}
	p.inject(w, r, c, pl)
}

// plan is what a request gets: every matching modifier (latency, sqs-delay, no-condition) and
// at most one outcome (any other kind), with the process that sent it when a rule needed it.
type plan struct {
	modifiers []Rule
	outcome   *Rule
	pid       int
	function  string
}

func (pl plan) empty() bool { return len(pl.modifiers) == 0 && pl.outcome == nil }

// isModifier tells the kinds that combine with others from those that decide the outcome.
func isModifier(k Kind) bool {
	return k == KindLatency || k == KindSQSDelay || k == KindNoCondition
}

// choose returns r's plan: the rules, in order, that match it and whose rate roll fires, each
// modifier kind and the first outcome kind among them.
func (p *Proxy) choose(r *http.Request, c call) plan {
	p.mu.Lock()
	needFn := slices.ContainsFunc(p.rules, func(a *active) bool { return a.Function != "" })
	p.mu.Unlock()
	var pl plan
	if needFn {
		var err error
		if pl.pid, pl.function, err = p.processOfRequest(r); err != nil {
			p.log.Debug("faultproxy: request not attributed", "service", c.service, "operation", c.operation, "error", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for _, a := range p.rules {
		if pl.outcome != nil && !isModifier(a.Kind) {
			continue
		}
		if !a.until.IsZero() && !now.Before(a.until) || a.Limit > 0 && a.applied >= a.Limit || !a.matches(c, pl.function) {
			continue
		}
		if a.Rate > 0 && a.Rate < 1 && p.rng.Float64() >= a.Rate {
			continue
		}
		a.applied++
		rule := a.Rule
		if isModifier(rule.Kind) {
			pl.modifiers = append(pl.modifiers, rule)
		} else {
			pl.outcome = &rule
		}
	}
	return pl
}

// matches reports whether a applies to c from function fn.
func (a *active) matches(c call, fn string) bool {
	if a.Service != "" && a.Service != c.service {
		return false
	}
	if len(a.Operations) > 0 && !slices.Contains(a.Operations, c.operation) {
		return false
	}
	if a.Function != "" && (fn == "" || !strings.Contains(fn, a.Function)) {
		return false
	}
	if a.Match != "" && !bytes.Contains(c.body, []byte(a.Match)) {
		return false
	}
	switch a.Kind {
	case KindSQSDuplicate, KindSQSDelay:
		return isSQSSend(c)
	case KindNoCondition:
		return isConditionalWrite(c)
	}
	return true
}

// inject carries out pl on r: the rewrites of the body, the latency before forwarding, the
// outcome, and the latency after.
func (p *Proxy) inject(w http.ResponseWriter, r *http.Request, c call, pl plan) {
	ctx := r.Context()
	fn := pl.function
	c, before, after := p.modify(c, pl)
	if before > 0 && !sleep(ctx, before) {
		return
	}
	// answer writes the upstream's answer, after the added latency.
	answer := func(resp response) {
		if after > 0 && !sleep(ctx, after) {
			return
		}
		resp.write(w)
	}
	if pl.outcome == nil {
		if resp, ok := p.forwardOrFail(w, r, c); ok {
			answer(resp)
		}
		return
	}
	p.outcome(w, r, c, *pl.outcome, pl.pid, fn, answer)
}

// modify applies pl's modifiers: c with its body rewritten, and the latency to add before
// forwarding and after.
func (p *Proxy) modify(c call, pl plan) (out call, before, after time.Duration) {
	fn := pl.function
	for _, m := range pl.modifiers {
		switch m.Kind {
		case KindLatency:
			if m.After {
				after += m.Latency
			} else {
				before += m.Latency
			}
			p.counted(c, m, fn)
		case KindSQSDelay, KindNoCondition:
			rewrite := dropCondition
			if m.Kind == KindSQSDelay {
				rewrite = func(c call) ([]byte, error) { return addDelay(c, m.Latency) }
			}
			b, err := rewrite(c)
			if err != nil {
				p.log.Warn("faultproxy: request not rewritten", "service", c.service, "operation", c.operation, "kind", string(m.Kind), "error", err)
				continue
			}
			c.body = b
			p.counted(c, m, fn)
		}
	}
	return c, before, after
}

// outcome carries out rule, an outcome kind, on r; answer writes an upstream answer.
func (p *Proxy) outcome(w http.ResponseWriter, r *http.Request, c call, rule Rule, pid int, fn string, answer func(response)) {
	switch rule.Kind {
	case KindThrottle:
		p.counted(c, rule, fn)
		throttleAnswer(c).write(w)
	case KindError500:
		p.counted(c, rule, fn)
		internalAnswer(c).write(w)
	case KindDropResponse:
		if _, ok := p.forwardOrFail(w, r, c); ok {
			p.counted(c, rule, fn)
			hangUp(w, false)
		}
	case KindReset:
		if rule.After {
			if _, ok := p.forwardOrFail(w, r, c); !ok {
				return
			}
		}
		p.counted(c, rule, fn)
		hangUp(w, true)
	case KindSQSDuplicate:
		resp, ok := p.forwardOrFail(w, r, c)
		if !ok {
			return
		}
		if resp.status/100 == 2 {
			if _, err := p.forward(r, c); err == nil {
				p.counted(c, rule, fn)
			}
		}
		answer(resp)
	case KindKill:
		p.killFault(w, r, c, rule, pid, fn)
	}
}

// killFault kills the process of function fn (pid) before the request is forwarded, after
// it was forwarded and before its answer is written, or Latency after the answer.
func (p *Proxy) killFault(w http.ResponseWriter, r *http.Request, c call, rule Rule, pid int, fn string) {
	// Counted first, so that whoever sees the process gone also sees it counted; taken back
	// when the kill failed.
	kill := func() {
		pids := []int{pid}
		if rule.All {
			others, err := p.others(pid, fn)
			if err != nil {
				p.log.Error("faultproxy: the function's other processes not found", "function", fn, "error", err)
			}
			pids = append(pids, others...)
		}
		for _, pid := range pids {
			p.counted(c, rule, fn)
			if err := p.kill(pid, fn); err != nil {
				p.mu.Lock()
				p.faults[faultKey{c.service, c.operation, rule.Kind, fn}]--
				p.mu.Unlock()
				p.log.Error("faultproxy: kill failed", "function", fn, "pid", pid, "error", err)
			}
		}
	}
	if !rule.After {
		kill()
		hangUp(w, false)
		return
	}
	resp, ok := p.forwardOrFail(w, r, c)
	if !ok {
		return
	}
	if rule.Latency <= 0 {
		kill()
		hangUp(w, false)
		return
	}
	resp.write(w)
	go func() {
		time.Sleep(rule.Latency)
		kill()
	}()
}

// counted records that rule's fault was injected into c, from function fn.
func (p *Proxy) counted(c call, rule Rule, fn string) {
	p.mu.Lock()
	p.faults[faultKey{c.service, c.operation, rule.Kind, fn}]++
	p.mu.Unlock()
	p.log.Info("faultproxy: fault injected", "service", c.service, "operation", c.operation, "kind", string(rule.Kind), "function", fn)
}

// response is an upstream answer, read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

// hopByHop are the headers a proxy does not pass on (RFC 9110, 7.6.1).
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward sends c (with its possibly rewritten body) to the upstream with r's method, path,
// Host and headers, so that the SigV4 signature and the emulator's host-based routing see what
// the caller sent. The caller going away does not cancel it: what reached the proxy reaches
// the emulator, as a request that reached AWS is processed.
func (p *Proxy) forward(r *http.Request, c call) (response, error) {
	u := *p.upstream
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, u.String(), bytes.NewReader(c.body))
	if err != nil {
		return response{}, err
	}
	out.Header = r.Header.Clone()
	for _, h := range hopByHop {
		out.Header.Del(h)
	}
	out.Host = r.Host
	out.ContentLength = int64(len(c.body))
	resp, err := p.client.Do(out)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, err
	}
	p.mu.Lock()
	p.forwarded[opKey{c.service, c.operation}]++
	p.mu.Unlock()
	h := resp.Header.Clone()
	for _, k := range hopByHop {
		h.Del(k)
	}
	return response{status: resp.StatusCode, header: h, body: b}, nil
}

// forwardOrFail forwards c and, when the upstream cannot be reached, answers 502.
func (p *Proxy) forwardOrFail(w http.ResponseWriter, r *http.Request, c call) (response, bool) {
	resp, err := p.forward(r, c)
	if err != nil {
		p.log.Warn("faultproxy: upstream failed", "service", c.service, "operation", c.operation, "error", err)
		http.Error(w, "faultproxy: upstream: "+err.Error(), http.StatusBadGateway)
		return response{}, false
	}
	return resp, true
}

// relay forwards c and writes the answer.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, c call) {
	if resp, ok := p.forwardOrFail(w, r, c); ok {
		resp.write(w)
	}
}

// write writes resp as the emulator gave it, its Content-Length included: the body is the
// one read, and a HEAD answer's Content-Length is the object's size, not its empty body's.
func (resp response) write(w http.ResponseWriter) {
	for k, v := range resp.header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.status)
	_, _ = w.Write(resp.body)
}

// hangUp closes the caller's connection without an answer: with reset, with a TCP RST (linger
// 0), as a connection reset by a load balancer; without, with a FIN, as a response lost.
func hangUp(w http.ResponseWriter, reset bool) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// sleep waits d, or until ctx is done (false).
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// control serves the control API (see ControlPrefix).
func (p *Proxy) control(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, ControlPrefix)
	switch {
	case path == "healthz":
		w.WriteHeader(http.StatusNoContent)
	case path == "rules" && r.Method == http.MethodGet:
		p.mu.Lock()
		rules := make([]Rule, 0, len(p.rules))
		for _, a := range p.rules {
			rules = append(rules, a.Rule)
		}
		p.mu.Unlock()
		writeJSON(w, rulesBody{Rules: rules})
	case path == "rules" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		p.setRules(w, r)
	case path == "rules" && r.Method == http.MethodDelete:
		p.mu.Lock()
		p.rules = nil
		p.mu.Unlock()
		p.log.Info("faultproxy: rules cleared")
		w.WriteHeader(http.StatusNoContent)
	case path == "counts" && r.Method == http.MethodGet:
		writeJSON(w, p.Counts())
	case path == "counts" && r.Method == http.MethodDelete:
		p.mu.Lock()
		p.requests, p.forwarded, p.faults = map[opKey]int64{}, map[opKey]int64{}, map[faultKey]int64{}
		p.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "faultproxy: no such control endpoint", http.StatusNotFound)
	}
}

// setRules replaces (PUT) or extends (POST) the rules with the body's, all or none.
func (p *Proxy) setRules(w http.ResponseWriter, r *http.Request) {
	var b rulesBody
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&b); err != nil {
		http.Error(w, "faultproxy: rules: "+err.Error(), http.StatusBadRequest)
		return
	}
	now := p.now()
	actives := make([]*active, 0, len(b.Rules))
	for i, rule := range b.Rules {
		if err := rule.Validate(); err != nil {
			http.Error(w, fmt.Sprintf("faultproxy: rule %d: %v", i, err), http.StatusBadRequest)
			return
		}
		if rule.Kind == KindKill && !attributeSupported {
			http.Error(w, "faultproxy: kill rules need Linux", http.StatusBadRequest)
			return
		}
		a := &active{Rule: rule}
		if rule.For > 0 {
			a.until = now.Add(rule.For)
		}
		actives = append(actives, a)
	}
	p.mu.Lock()
	if r.Method == http.MethodPut {
		p.rules = actives
	} else {
		p.rules = append(p.rules, actives...)
	}
	p.mu.Unlock()
	p.log.Info("faultproxy: rules set", "rules", len(actives), "replace", r.Method == http.MethodPut)
	w.WriteHeader(http.StatusNoContent)
}

// Counts returns what p did, sorted by service, operation, kind and function.
func (p *Proxy) Counts() Counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	ops := func(m map[opKey]int64) []OpCount {
		out := make([]OpCount, 0, len(m))
		for k, n := range m {
			out = append(out, OpCount{Service: k.service, Operation: k.operation, Count: n})
		}
		slices.SortFunc(out, func(a, b OpCount) int {
			return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Operation, b.Operation))
		})
		return out
	}
	c := Counts{Requests: ops(p.requests), Forwarded: ops(p.forwarded), Faults: make([]FaultCount, 0, len(p.faults))}
	for k, n := range p.faults {
		c.Faults = append(c.Faults, FaultCount{Service: k.service, Operation: k.operation, Kind: k.kind, Function: k.function, Count: n})
	}
	slices.SortFunc(c.Faults, func(a, b FaultCount) int {
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Function, b.Function))
	})
	return c
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
