package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/dev/emulator"
	"github.com/resetnotify/resetnotify/dev/pump"
	"github.com/resetnotify/resetnotify/dev/workertest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/sms/simapi"
	"github.com/resetnotify/resetnotify/shared/worker"
)

// code is the one-time code every test request carries; it must never reach a log.
const code = "Q7Z3K9"

// request returns a request for key to the number to whose dispatch deadline is deadlineIn from
// now under policy p.
func request(key, to string, p notify.Policy, deadlineIn time.Duration) notify.Request {
	return notify.Request{
		IdempotencyKey: key, EventID: "evt-" + key, Channel: notify.ChannelSMS,
		Purpose: notify.PurposePasswordReset, To: to, Locale: "en",
		Params:    map[string]string{notify.ParamCode: code},
		ExpiresAt: time.Now().UTC().Add(deadlineIn + p.SafetyMargin),
	}
}

// requestsTo returns the simulator's log of send requests to to, in arrival order.
func requestsTo(all []simapi.RequestEntry, to string) []simapi.RequestEntry {
	var out []simapi.RequestEntry
	for _, e := range all {
		if e.To == to {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b simapi.RequestEntry) int { return a.Seq - b.Seq })
	return out
}

// modes lists the modes of entries, for failure messages.
func modes(entries []simapi.RequestEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ClientRef[strings.LastIndex(e.ClientRef, "-")+1:] + ":" + e.Mode + ":" + strconv.Itoa(e.HTTPStatus)
		if e.Recorded {
			out[i] += ":recorded"
		}
	}
	return out
}

// crew runs the workers the way Lambda would, concurrently: several pollers on each queue (each
// batch handled with the worker's own parallelism) and the sweeper on a schedule.
type crew struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
	once   sync.Once
}

// crewOptions shape a crew.
type crewOptions struct {
	// Dispatchers and Reconcilers are the pollers per queue.
	Dispatchers, Reconcilers int
	// SweepEvery is the sweeper's period; 0 means no sweeper.
	SweepEvery time.Duration
	// Visibility hides each received message for this long.
	Visibility time.Duration
}

// startCrew starts the workers of st; stop them with stop.
func startCrew(st *workertest.Stack, o crewOptions) *crew {
	ctx, cancel := context.WithCancel(context.Background())
	c := &crew{cancel: cancel}
	poll := func(queueURL string, h worker.BatchHandler) {
		defer c.wg.Done()
		for ctx.Err() == nil {
			_, err := pump.Once(ctx, st.SQS, queueURL, h, pump.Options{
				WaitTime: time.Second, VisibilityTimeout: o.Visibility, Region: emulator.Region,
			})
			if err != nil && ctx.Err() == nil {
				c.fail(err)
			}
		}
	}
	for range o.Dispatchers {
		c.wg.Add(1)
		go poll(st.DispatchURL, st.Dispatcher.Handle)
	}
	for range o.Reconcilers {
		c.wg.Add(1)
		go poll(st.ReconcileURL, st.Reconciler.Handle)
	}
	if o.SweepEvery > 0 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			tick := time.NewTicker(o.SweepEvery)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := st.Sweeper.Sweep(ctx); err != nil && ctx.Err() == nil {
					c.fail(err)
				}
			}
		}()
	}
	return c
}

func (c *crew) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, err)
}

// stop stops the workers, waits for them and returns what went wrong while they ran. Only the
// first call returns the errors.
func (c *crew) stop() error {
	var err error
	c.once.Do(func() {
		c.cancel()
		c.wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		err = errors.Join(c.errs...)
	})
	return err
}

// waitFor polls cond every interval until it holds, failing t after timeout.
func waitFor(t *testing.T, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %s", what, timeout)
		}
		time.Sleep(interval)
	}
}

// gatewayFault is what the gateway does with one send request.
type gatewayFault string

// The gateway's faults. "after" faults forward the request to the simulator first, so the
// provider has recorded the message when the client sees the fault; "before" faults never
// reach it.
const (
	// passThrough relays the simulator's answer unchanged.
	passThrough gatewayFault = "pass"
	// badGatewayAfter and gatewayTimeoutAfter answer 502 and 504 after the provider answered.
	badGatewayAfter     gatewayFault = "502_after"
	gatewayTimeoutAfter gatewayFault = "504_after"
	// badGatewayBefore answers 502 without reaching the provider.
	badGatewayBefore gatewayFault = "502_before"
	// truncatedAfter relays the provider's 201 but cuts the body short and closes the
	// connection: the status is known, the body unreadable.
	truncatedAfter gatewayFault = "truncated_after"
	// garbageAfter answers 200 with a body that is not the provider's JSON.
	garbageAfter gatewayFault = "garbage_after"
	// resetAfter resets the TCP connection (RST) once the provider answered.
	resetAfter gatewayFault = "reset_after"
)

// gateway is an HTTP proxy in front of the simulator that injects the faults a load balancer
// or a broken network path produces, per destination: each send request to a number takes the
// next of its scripted faults (the last one stays). Lookups pass through unchanged.
type gateway struct {
	URL    string
	target *url.URL
	proxy  *httputil.ReverseProxy
	client *http.Client

	mu      sync.Mutex
	scripts map[string][]gatewayFault
}

// startGateway serves a gateway on loopback; point it at the simulator with setTarget.
func startGateway(t *testing.T) *gateway {
	g := &gateway{scripts: map[string][]gatewayFault{}, client: &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.URL = srv.URL
	return g
}

func (g *gateway) setTarget(t *testing.T, base string) {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	g.target = u
	g.proxy = httputil.NewSingleHostReverseProxy(u)
}

// script sets the faults of the next send requests to to.
func (g *gateway) script(to string, faults ...gatewayFault) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.scripts[to] = faults
}

func (g *gateway) next(to string) gatewayFault {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.scripts[to]
	if len(s) == 0 {
		return passThrough
	}
	if len(s) > 1 {
		g.scripts[to] = s[1:]
	}
	return s[0]
}

// ServeHTTP forwards a request, or injects the destination's next fault into a send.
func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/messages" {
		g.proxy.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "gateway: reading the request", http.StatusBadRequest)
		return
	}
	var req simapi.SendRequest
	_ = json.Unmarshal(body, &req) // an unparseable request goes through and the provider refuses it
	fault := g.next(req.To)
	if fault == badGatewayBefore {
		http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
		return
	}

	// Forward, and wait for the provider's whole answer.
	out, err := http.NewRequestWithContext(r.Context(), http.MethodPost, g.target.String()+"/messages", bytes.NewReader(body))
	if err != nil {
		http.Error(w, "gateway", http.StatusInternalServerError)
		return
	}
	out.Header = r.Header.Clone()
	resp, err := g.client.Do(out)
	if err != nil {
		// The provider hung up or the client left: hang up too.
		panic(http.ErrAbortHandler)
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		panic(http.ErrAbortHandler)
	}

	switch fault {
	case badGatewayAfter:
		http.Error(w, "<html>502 Bad Gateway</html>", http.StatusBadGateway)
	case gatewayTimeoutAfter:
		http.Error(w, "<html>504 Gateway Time-out</html>", http.StatusGatewayTimeout)
	case garbageAfter:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "<html>maintenance</html>")
	case truncatedAfter:
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		_, _ = buf.WriteString("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " +
			strconv.Itoa(len(answer)+64) + "\r\n\r\n" + string(answer[:len(answer)/2]))
		_ = buf.Flush()
		_ = conn.Close()
	case resetAfter:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if tcp, ok := conn.(*net.TCPConn); ok {
			_ = tcp.SetLinger(0) // close with RST, not FIN
		}
		_ = conn.Close()
	default:
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(answer)
	}
}
