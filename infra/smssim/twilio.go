package smssim

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/adapters/sms/simapi"
)

// ProviderTwilio is the Twilio mode: the simulator speaks Twilio Programmable Messaging's
// Messages resource (API version 2010-04-01) besides its own API, which keeps serving the
// control endpoints and the inbox.
//
//	POST /2010-04-01/Accounts/{AccountSid}/Messages.json   create (form: To, From or
//	     MessagingServiceSid, Body, ValidityPeriod, StatusCallback) → 201 {"sid": "SM...", ...}
//	GET  /2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json  fetch by SID, consistent at once
//	GET  /2010-04-01/Accounts/{AccountSid}/Messages.json?To=&DateSent=  the list, which leaves
//	     a message out until Config.ListLag has passed since it was accepted
//
// Each is authenticated with HTTP basic under the account's API key (key SID, secret); the
// account SID with its auth token is refused. The faults answer as
// Twilio documents: reject is 400 with error 21211, reject_country 400 with 21408 (geo
// permissions), throttle 429 with 20429, unavailable 503, 500_after_accept 500. At its final
// status each message's StatusCallback is POSTed the form Twilio sends (MessageSid,
// MessageStatus, ErrorCode, AccountSid, To, From, ApiVersion), signed in X-Twilio-Signature
// with the auth token (posted up to three times on a failure, where Twilio by default does not
// retry): HMAC-SHA1 of the URL followed by the sorted parameters, written here
// apart from provider-events' check so that one cannot hide a mistake of the other. The
// attempt reference the callback URL carries (?attempt=) is the message's client reference in
// the inbox.
const ProviderTwilio = "twilio"

// twilioPrefix is the path prefix of the Twilio API.
const twilioPrefix = "/2010-04-01/"

func (s *Server) twilioRoutes() {
	base := "/2010-04-01/Accounts/{account}/Messages"
	s.mux.HandleFunc("POST "+base+".json", s.handleTwilioSend)
	s.mux.HandleFunc("GET "+base+".json", s.handleTwilioList)
	s.mux.HandleFunc("GET "+base+"/{file}", s.handleTwilioGet)
}

// twilioError answers Twilio's error body.
func twilioError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "more_info": "https://www.twilio.com/docs/errors/" + strconv.Itoa(code), "status": status})
}

// twilioCodes are the Twilio errors the simulator's refusals stand for.
var twilioCodes = map[string]int{
	simapi.CodeDestinationRejected: 21211,
	simapi.CodeCountryNotSupported: 21408,
	simapi.CodeThrottled:           20429,
	simapi.CodeNotProcessed:        20503,
	simapi.CodeInternal:            20500,
	simapi.CodeInvalidRequest:      21602,
	simapi.CodeUnauthorized:        20003,
	simapi.CodeNotFound:            20404,
}

// refuse answers a send's refusal in the dialect of the request: Twilio's error body with its
// code on the Twilio routes, simapi.Error otherwise.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if strings.HasPrefix(r.URL.Path, twilioPrefix) {
		twilioError(w, status, twilioCodes[code], msg)
		return
	}
	writeError(w, status, code, msg)
}

// accepted answers an accepted send in the dialect of the request.
func (s *Server) accepted(w http.ResponseWriter, r *http.Request, m *Message) {
	if strings.HasPrefix(r.URL.Path, twilioPrefix) {
		writeJSON(w, http.StatusCreated, s.twilioView(*m, s.clock.Now()))
		return
	}
	writeJSON(w, http.StatusCreated, simapi.SendResponse{MessageID: m.MessageID})
}

// twilioAuthorized checks that the path names the account and HTTP basic carries its API
// key's SID and secret; the auth token is refused (Config.TwilioAPIKeySID).
func (s *Server) twilioAuthorized(r *http.Request) bool {
	user, pass, ok := r.BasicAuth()
	return ok && s.cfg.TwilioAPIKeySID != "" && s.cfg.TwilioAPIKeySecret != "" &&
		r.PathValue("account") == s.cfg.TwilioAccountSID && user == s.cfg.TwilioAPIKeySID &&
		subtle.ConstantTimeCompare([]byte(pass), []byte(s.cfg.TwilioAPIKeySecret)) == 1
}

func (s *Server) handleTwilioSend(w http.ResponseWriter, r *http.Request) {
	if !s.twilioAuthorized(r) {
		twilioError(w, http.StatusUnauthorized, 20003, "authenticate")
		return
	}
	body := http.MaxBytesReader(w, r.Body, 16<<10)
	raw, err := io.ReadAll(body)
	form, perr := url.ParseQuery(string(raw))
	if err != nil || perr != nil {
		twilioError(w, http.StatusBadRequest, 21602, "the body is not a form")
		return
	}
	validity, err := strconv.ParseInt(form.Get("ValidityPeriod"), 10, 64)
	if err != nil || validity < 1 || validity > 36000 {
		twilioError(w, http.StatusBadRequest, 21617, "ValidityPeriod must be 1 to 36000")
		return
	}
	if (form.Get("From") == "") == (form.Get("MessagingServiceSid") == "") {
		twilioError(w, http.StatusBadRequest, 21603, "a From or a MessagingServiceSid is required")
		return
	}
	cb := form.Get("StatusCallback")
	ref := ""
	if u, err := url.Parse(cb); err == nil {
		ref = u.Query().Get("attempt")
	}
	req := simapi.SendRequest{To: form.Get("To"), Body: form.Get("Body"), ClientRef: ref, ValiditySeconds: validity}
	if ref == "" {
		// No attempt named: the simulator still records the message, under a reference of
		// its own, as Twilio would send it.
		req.ClientRef = "twilio-unreferenced"
	}
	if err := validate(req); err != nil {
		twilioError(w, http.StatusBadRequest, 21211, err.Error())
		return
	}
	s.mu.Lock()
	if cb != "" {
		s.callbacks[req.ClientRef] = cb
	}
	s.mu.Unlock()
	mode, receipt := s.decide(req.To)
	e := s.logRequest(simapi.RequestEntry{At: s.clock.Now(), To: req.To, ClientRef: req.ClientRef, Mode: string(mode)})
	s.answer(w, r, e, req, mode, receipt)
}

// twilioStatus is m's status at now as Twilio reports it, with its error code.
func twilioStatus(m Message, now time.Time) (status string, errorCode int) {
	switch {
	case now.Before(m.DeliverAt) || m.Receipt == simapi.StatusAccepted:
		return "sent", 0
	case m.Lapsed:
		// The validity period ran out in Twilio's queue.
		return "failed", 30001
	case m.Receipt == simapi.StatusUndelivered:
		return "undelivered", 30003
	}
	return "delivered", 0
}

// twilioView is the part of Twilio's Message resource the simulator shows.
func (s *Server) twilioView(m Message, now time.Time) map[string]any {
	status, code := twilioStatus(m, now)
	if now.Before(m.AcceptedAt.Add(time.Millisecond)) {
		status = "queued"
	}
	v := map[string]any{
		"sid": m.MessageID, "account_sid": s.cfg.TwilioAccountSID, "to": m.To, "status": status,
		"date_created": m.AcceptedAt.Format(time.RFC1123Z), "date_updated": now.UTC().Format(time.RFC1123Z),
		"api_version": "2010-04-01", "error_code": nil,
	}
	if code != 0 {
		v["error_code"] = code
	}
	return v
}

func (s *Server) handleTwilioGet(w http.ResponseWriter, r *http.Request) {
	if !s.twilioAuthorized(r) {
		twilioError(w, http.StatusUnauthorized, 20003, "authenticate")
		return
	}
	if s.lookupFault(w, r) {
		return
	}
	sid, ok := strings.CutSuffix(r.PathValue("file"), ".json")
	s.mu.Lock()
	m, found := s.byID[sid]
	var msg Message
	if found {
		msg = *m
	}
	s.mu.Unlock()
	if !ok || !found {
		twilioError(w, http.StatusNotFound, 20404, "the requested resource was not found")
		return
	}
	writeJSON(w, http.StatusOK, s.twilioView(msg, s.clock.Now()))
}

// handleTwilioList answers the list by To, leaving out what was accepted less than ListLag
// ago: a client that read this list as "not found" would send twice.
func (s *Server) handleTwilioList(w http.ResponseWriter, r *http.Request) {
	if !s.twilioAuthorized(r) {
		twilioError(w, http.StatusUnauthorized, 20003, "authenticate")
		return
	}
	if s.lookupFault(w, r) {
		return
	}
	to, now := r.URL.Query().Get("To"), s.clock.Now()
	list := []map[string]any{}
	for _, m := range s.Messages() {
		if (to == "" || m.To == to) && !now.Before(m.AcceptedAt.Add(s.cfg.ListLag)) {
			list = append(list, s.twilioView(m, now))
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"messages": list, "page": 0, "page_size": 50})
}

// twilioSignature signs a callback to fullURL with form under token, as Twilio does.
func twilioSignature(token, fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		vs := append([]string(nil), form[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			b.WriteString(k + v)
		}
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// postTwilioCallback posts m's final status to its StatusCallback URL, signed, trying three
// times.
func (s *Server) postTwilioCallback(cb string, m Message) {
	status, code := twilioStatus(m, m.DeliverAt)
	form := url.Values{
		"MessageSid": {m.MessageID}, "SmsSid": {m.MessageID}, "MessageStatus": {status}, "SmsStatus": {status},
		"AccountSid": {s.cfg.TwilioAccountSID}, "To": {m.To}, "From": {"+15005550006"}, "ApiVersion": {"2010-04-01"},
	}
	if code != 0 {
		form.Set("ErrorCode", strconv.Itoa(code))
	}
	sig := twilioSignature(s.cfg.TwilioAuthToken, cb, form)
	for try := 1; try <= 3; try++ {
		req, err := http.NewRequestWithContext(s.ctx, http.MethodPost, cb, strings.NewReader(form.Encode()))
		if err != nil {
			s.log.Error("smssim.twilio_callback", "message_id", m.MessageID, "err", err)
			return
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Twilio-Signature", sig)
		resp, err := s.hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode < 300 {
				s.log.Info("smssim.twilio_callback", "message_id", m.MessageID, "client_ref", m.ClientRef, "status", status)
				return
			}
			s.log.Warn("smssim.twilio_callback", "message_id", m.MessageID, "try", try, "status", resp.StatusCode)
		} else {
			s.log.Warn("smssim.twilio_callback", "message_id", m.MessageID, "try", try, "err", err)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(time.Duration(try) * 200 * time.Millisecond):
		}
	}
}
