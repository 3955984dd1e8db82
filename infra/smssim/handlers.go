package smssim

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A client that hung up cannot be told anything; the request log has the outcome.
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, simapi.Error{Code: code, Message: msg})
}

func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return true
	}
	want := "Bearer " + s.cfg.Token
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(want)) == 1
}

// validate checks a send request; its error never names the number or the body.
func validate(req simapi.SendRequest) error {
	var errs []error
	if !e164.MatchString(req.To) {
		errs = append(errs, errors.New("to is not an E.164 number"))
	}
	if req.Body == "" || len(req.Body) > MaxBodyBytes {
		errs = append(errs, fmt.Errorf("body must be 1 to %d bytes", MaxBodyBytes))
	}
	if req.ClientRef == "" || len(req.ClientRef) > MaxClientRefLen {
		errs = append(errs, fmt.Errorf("client_ref must be 1 to %d bytes", MaxClientRefLen))
	}
	if req.ValiditySeconds < 1 || req.ValiditySeconds > MaxValiditySeconds {
		errs = append(errs, fmt.Errorf("validity_seconds must be 1 to %d", MaxValiditySeconds))
	}
	return errors.Join(errs...)
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	req, ok := s.readSend(w, r)
	if !ok {
		return
	}
	mode, receipt := s.decide(req.To)
	e := s.logRequest(simapi.RequestEntry{At: s.clock.Now(), To: req.To, ClientRef: req.ClientRef, Mode: string(mode)})
	s.answer(w, r, e, req, mode, receipt)
}

// readSend reads an authorized, valid send request, or answers the error and returns false.
func (s *Server) readSend(w http.ResponseWriter, r *http.Request) (simapi.SendRequest, bool) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, simapi.CodeUnauthorized, "missing or wrong bearer token")
		return simapi.SendRequest{}, false
	}
	var req simapi.SendRequest
	body := http.MaxBytesReader(w, r.Body, 16<<10)
	err := json.NewDecoder(body).Decode(&req)
	// Reading to EOF lets the server notice when the client hangs up while we wait.
	_, _ = io.Copy(io.Discard, body)
	if err != nil {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "body is not a JSON send request")
		return simapi.SendRequest{}, false
	}
	if err := validate(req); err != nil {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, err.Error())
		return simapi.SendRequest{}, false
	}
	return req, true
}

// answer answers req as mode says, recording the message when mode accepts it, and finishes
// the log entry e with what the client got. It is one case per mode, and long because, split,
// the table of what each fault does would be spread over several functions.
//
//revive:disable-next-line:function-length
func (s *Server) answer(w http.ResponseWriter, r *http.Request, e *simapi.RequestEntry, req simapi.SendRequest, mode Mode, receipt simapi.Status) {
	switch mode {
	case ModeReject:
		s.refuse(w, r, http.StatusBadRequest, simapi.CodeDestinationRejected, "destination rejected permanently")
		s.finish(e, http.StatusBadRequest, "")
	case ModeRejectCountry:
		s.refuse(w, r, http.StatusBadRequest, simapi.CodeCountryNotSupported, "destination country not supported by this provider")
		s.finish(e, http.StatusBadRequest, "")
	case ModeThrottle:
		w.Header().Set("Retry-After", retryAfterSeconds(s.cfg.RetryAfter))
		s.refuse(w, r, http.StatusTooManyRequests, simapi.CodeThrottled, "too many requests; not processed")
		s.finish(e, http.StatusTooManyRequests, "")
	case ModeUnavailable:
		w.Header().Set("Retry-After", retryAfterSeconds(s.cfg.RetryAfter))
		s.refuse(w, r, http.StatusServiceUnavailable, simapi.CodeNotProcessed, "unavailable; not processed")
		s.finish(e, http.StatusServiceUnavailable, "")
	case ModeTimeoutBeforeAccept:
		note := s.hang(r)
		s.finish(e, 0, note)
		s.drop(w)
	case ModeAcceptThenTimeout:
		s.record(e, req, mode, receipt)
		note := s.hang(r)
		s.finish(e, 0, note)
		s.drop(w)
	case ModeAcceptThenDrop:
		s.record(e, req, mode, receipt)
		s.finish(e, 0, "dropped")
		s.drop(w)
	case ModeErrorAfterAccept:
		s.record(e, req, mode, receipt)
		s.refuse(w, r, http.StatusInternalServerError, simapi.CodeInternal, "internal error")
		s.finish(e, http.StatusInternalServerError, "")
	case ModeBadGatewayBeforeAccept, ModeBadGatewayAfterAccept, ModeGatewayTimeoutAfterAccept, ModeGarbageAfterAccept:
		if mode.Records() {
			s.record(e, req, mode, receipt)
		}
		g := gatewayAnswers[mode]
		writeHTML(w, g.status, g.body)
		s.finish(e, g.status, "")
	case ModeTruncatedAfterAccept:
		m := s.record(e, req, mode, receipt)
		s.finish(e, http.StatusCreated, "truncated")
		s.truncate(w, m.MessageID)
	case ModeResetAfterAccept:
		s.record(e, req, mode, receipt)
		s.finish(e, 0, "reset")
		s.dropWithReset(w)
	case ModeLatency:
		if note := s.wait(r, s.cfg.Latency); note != "" {
			// The client stopped waiting: a real provider might still accept, but then the
			// attempt's call would not bound the acceptance time. Not recording keeps the
			// simulator's promise that it only accepts while the client waits.
			s.finish(e, 0, note)
			s.drop(w)
			return
		}
		fallthrough
	default:
		m := s.record(e, req, mode, receipt)
		s.accepted(w, r, m)
		s.finish(e, http.StatusCreated, "")
	}
}

// wait waits d, or until the client leaves or the server closes; it returns "" when the
// whole wait passed, else why it ended early.
func (s *Server) wait(r *http.Request, d time.Duration) string {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ""
	case <-r.Context().Done():
		return "client_gone"
	case <-s.ctx.Done():
		return "server_closed"
	}
}

// hang waits until the client gives up, the server closes or Config.Hang passes.
func (s *Server) hang(r *http.Request) string {
	if note := s.wait(r, s.cfg.Hang); note != "" {
		return note
	}
	return "hang_limit"
}

// drop closes the connection without an answer.
func (s *Server) drop(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 or a recorder: abort the handler, which resets the stream or connection.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// gatewayAnswers are the HTML answers of the gateway modes, as a load balancer or proxy gives
// them.
var gatewayAnswers = map[Mode]struct {
	status int
	body   string
}{
	ModeBadGatewayBeforeAccept:    {http.StatusBadGateway, "<html>502 Bad Gateway</html>"},
	ModeBadGatewayAfterAccept:     {http.StatusBadGateway, "<html>502 Bad Gateway</html>"},
	ModeGatewayTimeoutAfterAccept: {http.StatusGatewayTimeout, "<html>504 Gateway Time-out</html>"},
	ModeGarbageAfterAccept:        {http.StatusOK, "<html>maintenance</html>"},
}

// writeHTML answers status with an HTML body, as a load balancer or proxy does.
func writeHTML(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/html")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// truncate answers 201 with a Content-Length longer than the half of the send response it
// writes, and closes the connection.
func (s *Server) truncate(w http.ResponseWriter, messageID string) {
	answer, _ := json.Marshal(simapi.SendResponse{MessageID: messageID})
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_, _ = buf.WriteString("HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(answer)+64) + "\r\n\r\n" + string(answer[:len(answer)/2]))
	_ = buf.Flush()
	_ = conn.Close()
}

// dropWithReset closes the connection with a TCP RST instead of a FIN.
func (s *Server) dropWithReset(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}

// lookupFault answers a lookup with the configured failure, and reports whether it did.
func (s *Server) lookupFault(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	mode := s.lookupMode
	s.mu.Unlock()
	switch mode {
	case LookupUnavailable:
		w.Header().Set("Retry-After", retryAfterSeconds(s.cfg.RetryAfter))
		writeError(w, http.StatusServiceUnavailable, simapi.CodeNotProcessed, "lookup unavailable")
	case LookupError:
		writeError(w, http.StatusInternalServerError, simapi.CodeInternal, "lookup failed")
	case LookupTimeout:
		s.hang(r)
		s.drop(w)
	default:
		return false
	}
	return true
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, simapi.CodeUnauthorized, "missing or wrong bearer token")
		return
	}
	if s.lookupFault(w, r) {
		return
	}
	now := s.clock.Now()
	s.mu.Lock()
	m, ok := s.byID[r.PathValue("id")]
	if ok && !s.visible(m, now) {
		ok = false
	}
	var msg Message
	if ok {
		msg = *m
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, simapi.CodeNotFound, "no such message")
		return
	}
	writeJSON(w, http.StatusOK, view(msg, now))
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, simapi.CodeUnauthorized, "missing or wrong bearer token")
		return
	}
	ref := r.URL.Query().Get("client_ref")
	if ref == "" {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "client_ref is required")
		return
	}
	if s.lookupFault(w, r) {
		return
	}
	now := s.clock.Now()
	list := simapi.MessageList{Messages: []simapi.Message{}}
	s.mu.Lock()
	for _, m := range s.byRef[ref] {
		if s.visible(m, now) {
			list.Messages = append(list.Messages, view(*m, now))
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleInbox(w http.ResponseWriter, r *http.Request) {
	withBody := r.URL.Query().Get("include") == "body"
	inbox := simapi.Inbox{Destinations: map[string]simapi.InboxDestination{}}
	for _, m := range s.Messages() {
		d := inbox.Destinations[m.To]
		im := simapi.InboxMessage{
			MessageID:       m.MessageID,
			ClientRef:       m.ClientRef,
			Mode:            string(m.Mode),
			AcceptedAt:      m.AcceptedAt,
			ValiditySeconds: int64(m.Validity / time.Second),
			ValidUntil:      m.ValidUntil(),
			DeliverAt:       m.DeliverAt,
			Lapsed:          m.Lapsed,
			Receipt:         m.Receipt,
		}
		if withBody {
			im.Body = m.Body
		}
		d.Count++
		d.Messages = append(d.Messages, im)
		inbox.Destinations[m.To] = d
	}
	writeJSON(w, http.StatusOK, inbox)
}

func (s *Server) handleRequests(w http.ResponseWriter, _ *http.Request) {
	reqs := s.Requests()
	if reqs == nil {
		reqs = []simapi.RequestEntry{}
	}
	writeJSON(w, http.StatusOK, simapi.RequestLog{Requests: reqs})
}

func (s *Server) handleSetFault(w http.ResponseWriter, r *http.Request) {
	var f simapi.Fault
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&f); err != nil || f.To == "" {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "body must be a fault with a destination")
		return
	}
	names := f.Modes
	if f.Mode != "" {
		names = append([]string{f.Mode}, names...)
	}
	modes := make([]Mode, 0, len(names))
	for _, n := range names {
		m, err := ParseMode(n)
		if err != nil {
			writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, err.Error())
			return
		}
		modes = append(modes, m)
	}
	switch f.Receipt {
	case "", simapi.StatusDelivered, simapi.StatusUndelivered, simapi.StatusSilent:
	default:
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "receipt must be delivered, undelivered or silent")
		return
	}
	s.SetFault(f.To, modes...)
	s.SetReceipt(f.To, f.Receipt)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleClearFaults(w http.ResponseWriter, _ *http.Request) {
	s.ClearFaults()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleLookupFault(w http.ResponseWriter, r *http.Request) {
	var f simapi.LookupFault
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&f); err != nil {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "body must be a lookup fault")
		return
	}
	switch m := LookupMode(f.Mode); m {
	case LookupNormal, LookupUnavailable, LookupError, LookupTimeout:
		s.SetLookupMode(m)
	case "":
		s.SetLookupMode(LookupNormal)
	default:
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "unknown lookup mode")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleConnections closes or reopens the send port (simapi.Connections).
func (s *Server) handleConnections(w http.ResponseWriter, r *http.Request) {
	var c simapi.Connections
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&c); err != nil {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "body must be a connections setting")
		return
	}
	err := s.SetRefusing(c.Refuse)
	switch {
	case errors.Is(err, ErrNoSendPort):
		writeError(w, http.StatusConflict, simapi.CodeNoSendPort, "the simulator has no send port (-send-addr)")
		return
	case err != nil:
		s.log.Error("smssim.connections", "err", err)
		writeError(w, http.StatusInternalServerError, simapi.CodeInternal, "the send port could not be changed")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleReset(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	w.WriteHeader(http.StatusNoContent)
}

// handleFeedback records that a message's code was used, as End User Messaging SMS's
// PutMessageFeedback does. It needs no bearer token: it names a message already sent and
// cannot send one, so the function reporting it holds no sending credential.
func (s *Server) handleFeedback(w http.ResponseWriter, r *http.Request) {
	var fb simapi.Feedback
	if err := json.NewDecoder(io.LimitReader(r.Body, 1024)).Decode(&fb); err != nil || fb.Status != simapi.FeedbackReceived {
		writeError(w, http.StatusBadRequest, simapi.CodeInvalidRequest, "status must be "+simapi.FeedbackReceived)
		return
	}
	s.mu.Lock()
	m, ok := s.byID[r.PathValue("id")]
	if ok {
		m.Feedback = fb.Status
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, simapi.CodeNotFound, "no such message")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
