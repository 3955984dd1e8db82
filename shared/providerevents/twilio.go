package providerevents

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/config"
)

// TwilioSignatureHeader carries Twilio's signature of a status callback.
const TwilioSignatureHeader = "X-Twilio-Signature"

// TwilioSignatureSettingsHeader is present when a Twilio Webhooks Rule signs a callback with a
// shared key and another algorithm (HMAC-SHA256) instead of the auth token: such callbacks are
// refused, since this stack configures no such rule.
const TwilioSignatureSettingsHeader = "X-Twilio-Webhooks-Signature-Settings"

// twilioStatus maps a Twilio message status (a status callback's MessageStatus) to a receipt
// status: delivered is delivered; undelivered (the carrier did not deliver), failed (Twilio
// could not send it) and canceled are final failures; every other status (accepted, queued,
// sending, sent, scheduled, read) proves only that Twilio accepted the message. A status this
// table does not know is intermediate too: a signed callback for our attempt still proves
// acceptance.
var twilioStatus = map[string]sms.ReceiptStatus{
	"delivered":   sms.ReceiptDelivered,
	"undelivered": sms.ReceiptUndelivered,
	"failed":      sms.ReceiptUndelivered,
	"canceled":    sms.ReceiptUndelivered,
}

// TwilioSignature returns Twilio's signature of a callback to fullURL (scheme, host, path and
// query, exactly as Twilio was given it) with the form parameters form, under token: the URL
// followed by every parameter's name and value, sorted by name (and by value within a name),
// HMAC-SHA1 keyed with the auth token, base64-encoded.
func TwilioSignature(token []byte, fullURL string, form url.Values) string {
	mac := hmac.New(sha1.New, token)
	mac.Write([]byte(fullURL))
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		vs := slices.Clone(form[k])
		slices.Sort(vs)
		for _, v := range vs {
			mac.Write([]byte(k))
			mac.Write([]byte(v))
		}
	}
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// TwilioSignatureValid reports whether got is the signature of the callback under any of
// tokens (two during a rotation), compared in constant time. No token, or no signature,
// matches nothing.
func TwilioSignatureValid(tokens [][]byte, fullURL string, form url.Values, got string) bool {
	if got == "" {
		return false
	}
	ok := 0
	for _, t := range tokens {
		if len(t) == 0 {
			continue
		}
		want := TwilioSignature(t, fullURL, form)
		ok |= subtle.ConstantTimeCompare([]byte(want), []byte(got))
	}
	return ok == 1
}

// ParseTwilio turns a verified Twilio status callback (its form parameters, and the attempt
// reference its URL carried in config.TwilioCallbackAttemptQuery) into a receipt for provider
// twilio: the MessageSid is the message ID, the detail the MessageStatus and any ErrorCode
// (e.g. "undelivered:30003"). A callback without a MessageSid or MessageStatus, or whose URL
// names no attempt of ours, returns an error wrapping ErrPoison that never quotes it. To, From
// and Body are never read.
func ParseTwilio(attemptRef string, form url.Values) (Receipt, error) {
	sid, status := form.Get("MessageSid"), strings.ToLower(form.Get("MessageStatus"))
	if sid == "" || status == "" {
		return Receipt{}, fmt.Errorf("providerevents.parse twilio: no MessageSid or MessageStatus: %w", ErrPoison)
	}
	detail := status
	if code := form.Get("ErrorCode"); code != "" {
		detail += ":" + code
	}
	rc := Receipt{
		AttemptRef: attemptRef,
		MessageID:  sid,
		Status:     twilioStatus[status],
		Provider:   config.SMSTwilio,
		Detail:     safeDetail(detail),
	}
	if err := rc.Validate(); err != nil {
		return Receipt{}, fmt.Errorf("providerevents.parse twilio: %w", err)
	}
	return rc, nil
}
