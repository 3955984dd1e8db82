package intake_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/render"
)

// TestUnrenderableMessageIsRefused: a reset URL that passes validation but would not fit the
// SMS segment budget is refused with 400 before anything is stored, instead of being admitted
// and left to expire.
func TestUnrenderableMessageIsRefused(t *testing.T) {
	store, queue := notifytest.NewStore(), &notifytest.Queue{}
	in := &notify.Service{
		Store: store, Sealer: notifytest.Sealer{}, Hasher: notifytest.Sealer{}, Fingerprints: notifytest.Sealer{}, Queue: queue,
		Clock: notifytest.NewClock(t0), Policy: notify.DefaultPolicy(), NewID: notifytest.IDs("n"),
		Messages: render.New(2),
	}
	h := intake.New(in, slog.New(slog.DiscardHandler), &obs.Metrics{W: io.Discard, Function: "intake"})
	longURL := "https://shop.example/reset/" + strings.Repeat("x", 400)
	body, _ := json.Marshal(map[string]any{
		"event_id": eventID, "channel": "sms", "purpose": "password_reset", "to": phone,
		"params": map[string]string{"reset_url": longURL}, "expires_at": t0.Add(15 * time.Minute).Format(time.RFC3339),
	})
	resp, err := h.Handle(context.Background(), post(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 400 || !strings.Contains(resp.Body, string(intake.ProblemInvalidRequest)) || !strings.Contains(resp.Body, `"params"`) {
		t.Fatalf("status %d body %s, want 400 invalid-request on params", resp.StatusCode, resp.Body)
	}
	if strings.Contains(resp.Body, "xxxx") || strings.Contains(resp.Body, phone) {
		t.Errorf("the answer echoes the request: %s", resp.Body)
	}
	if len(store.All()) != 0 || len(queue.Sent()) != 0 {
		t.Error("an unrenderable request was stored or queued")
	}
	// A URL that fits is admitted by the same handler.
	body, _ = json.Marshal(map[string]any{
		"event_id": eventID, "channel": "sms", "purpose": "password_reset", "to": phone,
		"params": map[string]string{"reset_url": resetURL}, "expires_at": t0.Add(15 * time.Minute).Format(time.RFC3339),
	})
	if resp, _ := h.Handle(context.Background(), post(string(body))); resp.StatusCode != 202 {
		t.Fatalf("a renderable request got %d: %s", resp.StatusCode, resp.Body)
	}
}
