package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// collectionPath is the notifications collection, below the endpoint.
const collectionPath = "/v1/notifications"

// ChannelSMS is the only channel, and the default of Notification.Channel.
const ChannelSMS = "sms"

// The purposes and the param each takes (exactly one).
const (
	PurposePasswordReset = "password_reset" // ParamResetURL (https) or ParamCode
	PurposeOneTimeCode   = "one_time_code"  // ParamCode
	PurposeMagicLink     = "magic_link"     // ParamLink (https)

	ParamResetURL = "reset_url"
	ParamCode     = "code"
	ParamLink     = "link"
)

// Notification is a request to admit. To and Params are secrets: this package never puts them
// in an error.
type Notification struct {
	// IdempotencyKey names the notification. Empty means <EventID>:<Channel>:<Purpose>, as the
	// API derives it; the client always sends it, so every try carries the same key.
	IdempotencyKey string
	EventID        string
	// Channel defaults to ChannelSMS.
	Channel string
	Purpose string
	// To is an E.164 number.
	To string
	// Locale is a tag such as "en" or "pt-BR"; empty lets the API choose (en).
	Locale    string
	Params    map[string]string
	ExpiresAt time.Time
}

// Key returns the idempotency key Send uses for n.
func (n Notification) Key() string {
	if n.IdempotencyKey != "" {
		return n.IdempotencyKey
	}
	if n.EventID == "" || n.Purpose == "" {
		return ""
	}
	return n.EventID + ":" + n.channel() + ":" + n.Purpose
}

func (n Notification) channel() string {
	if n.Channel == "" {
		return ChannelSMS
	}
	return n.Channel
}

// wire is the request body. The key travels in the Idempotency-Key header only.
type wire struct {
	EventID   string            `json:"event_id"`
	Channel   string            `json:"channel"`
	Purpose   string            `json:"purpose"`
	To        string            `json:"to"`
	Locale    string            `json:"locale,omitempty"`
	Params    map[string]string `json:"params"`
	ExpiresAt string            `json:"expires_at,omitempty"`
}

// Status is a notification's status as the API returns it; it holds no secret.
type Status struct {
	IdempotencyKey    string    `json:"idempotency_key"`
	NotificationID    string    `json:"notification_id"`
	EventID           string    `json:"event_id"`
	Channel           string    `json:"channel"`
	Purpose           string    `json:"purpose"`
	State             string    `json:"state"`
	Reason            string    `json:"reason"`
	Version           int64     `json:"version"`
	Attempt           int       `json:"attempt"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
	ExpiresAt         time.Time `json:"expires_at"`
	DispatchDeadline  time.Time `json:"dispatch_deadline"`
	PolicyVersion     string    `json:"policy_version"`
	SafetyMarginMS    int64     `json:"safety_margin_ms"`
	Provider          string    `json:"provider,omitempty"`
	ProviderMessageID string    `json:"provider_message_id,omitempty"`
	// ConvertedAt is when the code or link was reported used (Convert); zero until then.
	ConvertedAt time.Time `json:"converted_at,omitzero"`
	// Attempts lists each attempt so far with the provider it went to, in order.
	Attempts []Attempt `json:"attempts,omitempty"`
}

// Attempt is one attempt of a notification: its number and the provider it went to.
type Attempt struct {
	Attempt  int    `json:"attempt"`
	Provider string `json:"provider,omitempty"`
}

// Result is the outcome of Send.
type Result struct {
	Status
	// Replayed is true when the final answer was a replay (200): the key had already been
	// admitted, by an earlier try of this call or by an earlier call.
	Replayed bool `json:"replayed"`
	// Location is the notification's path, from a first admission (202).
	Location string `json:"location,omitempty"`
	// Tries counts the HTTP requests the call made.
	Tries int `json:"tries"`
}

// Send admits n exactly once, repeating the same request as the package documentation says.
// A first admission (202) and a replay (200) are both success, and every call for one key
// returns the same notification ID. No try starts after n.ExpiresAt.
func (c *Client) Send(ctx context.Context, n Notification) (*Result, error) {
	w := wire{EventID: n.EventID, Channel: n.channel(), Purpose: n.Purpose, To: n.To, Locale: n.Locale, Params: n.Params}
	if !n.ExpiresAt.IsZero() {
		w.ExpiresAt = n.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if w.Params == nil {
		w.Params = map[string]string{}
	}
	body, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("client.send: encode: %w", err) // strings only: cannot happen
	}
	key := n.Key()
	header := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, application/problem+json"}}
	if key != "" {
		header.Set("Idempotency-Key", key)
	}
	req := request{op: "client.send " + key, method: http.MethodPost, path: collectionPath, header: header, body: body, notAfter: n.ExpiresAt}
	res := &Result{}
	tries, err := c.do(ctx, req, func(resp *response) (bool, error) {
		switch resp.status {
		case http.StatusAccepted, http.StatusOK:
			if err := json.Unmarshal(resp.body, &res.Status); err != nil || res.NotificationID == "" {
				return true, fmt.Errorf("%d answer without a notification", resp.status)
			}
			res.Replayed = resp.status == http.StatusOK
			res.Location = resp.header.Get("Location")
			return false, nil
		}
		return false, apiError(resp)
	})
	res.Tries = tries
	if err != nil {
		return nil, err
	}
	return res, nil
}

// Status returns the notification's status. The API reads it from its table only: looking
// never causes work.
func (c *Client) Status(ctx context.Context, key string) (*Status, error) {
	return c.keyed(ctx, "client.status", http.MethodGet, key)
}

// Cancel cancels the notification while it is accepted or retry_scheduled and returns its
// status. Cancelling one that is already cancelled returns its status too (a repeat after a
// lost answer must not fail); in any other state the error matches ErrNotCancellable and its
// Problem.State says where the notification stands.
func (c *Client) Cancel(ctx context.Context, key string) (*Status, error) {
	st, err := c.keyed(ctx, "client.cancel", http.MethodDelete, key)
	var ae *APIError
	if errors.As(err, &ae) && errors.Is(ae, ErrNotCancellable) && ae.Problem.State == "cancelled" {
		return c.Status(ctx, key)
	}
	return st, err
}

// keyed runs a GET or DELETE on one notification. A 409 concurrent-change is repeated like a
// 5xx: the API says repeating is safe.
func (c *Client) keyed(ctx context.Context, op, method, key string) (*Status, error) {
	if key == "" {
		return nil, fmt.Errorf("%s: empty key", op)
	}
	req := request{op: op + " " + key, method: method, path: collectionPath + "/" + url.PathEscape(key),
		header: http.Header{"Accept": {"application/json, application/problem+json"}}}
	st := &Status{}
	_, err := c.do(ctx, req, func(resp *response) (bool, error) {
		if resp.status == http.StatusOK {
			if err := json.Unmarshal(resp.body, st); err != nil || st.NotificationID == "" {
				return true, fmt.Errorf("%d answer without a notification", resp.status)
			}
			return false, nil
		}
		ae := apiError(resp)
		return ae.Problem.Type == ProblemConcurrentChange, ae
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// Conversion is the outcome of Convert.
type Conversion struct {
	Status
	// Replayed is true when the conversion had been recorded already (by an earlier try of
	// this call or an earlier call).
	Replayed bool `json:"replayed"`
}

// Convert reports that the notification's code or link was used. It is idempotent: every call
// for a key ends with the same converted status. A notification never sent returns an error
// matching ErrNotSent (its Problem.State says where it stands). A 503 feedback-unavailable
// (recorded, but the SMS provider not told) and a 409 concurrent-change are repeated like
// every 5xx.
func (c *Client) Convert(ctx context.Context, key string) (*Conversion, error) {
	if key == "" {
		return nil, errors.New("client.convert: empty key")
	}
	req := request{op: "client.convert " + key, method: http.MethodPost, path: collectionPath + "/" + url.PathEscape(key) + "/conversion",
		header: http.Header{"Accept": {"application/json, application/problem+json"}}}
	conv := &Conversion{}
	_, err := c.do(ctx, req, func(resp *response) (bool, error) {
		if resp.status == http.StatusOK {
			if err := json.Unmarshal(resp.body, &conv.Status); err != nil || conv.NotificationID == "" {
				return true, fmt.Errorf("%d answer without a notification", resp.status)
			}
			// A try whose answer was lost may have recorded it: a later try then replays.
			conv.Replayed = resp.header.Get("Idempotent-Replayed") == "true"
			return false, nil
		}
		ae := apiError(resp)
		return ae.Problem.Type == ProblemConcurrentChange, ae
	})
	if err != nil {
		return nil, err
	}
	return conv, nil
}
