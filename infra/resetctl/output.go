package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/resetnotify/resetnotify/client"
)

// printResult writes st as a table, or v (the status or the send result) as JSON.
func printResult(output string, w io.Writer, st client.Status, v any) error {
	if output == "json" {
		return writeJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(name, value string) {
		if value != "" {
			fmt.Fprintf(tw, "%s\t%s\n", name, value)
		}
	}
	row("notification_id", st.NotificationID)
	row("idempotency_key", st.IdempotencyKey)
	row("state", st.State+" ("+st.Reason+")")
	if res, ok := v.(*client.Result); ok {
		row("replayed", strconv.FormatBool(res.Replayed))
		row("tries", strconv.Itoa(res.Tries))
	}
	if conv, ok := v.(*client.Conversion); ok {
		row("replayed", strconv.FormatBool(conv.Replayed))
	}
	row("event_id", st.EventID)
	row("purpose", st.Purpose)
	row("attempt", strconv.Itoa(st.Attempt))
	row("expires_at", timeText(st.ExpiresAt))
	row("dispatch_deadline", timeText(st.DispatchDeadline))
	row("updated_at", timeText(st.UpdatedAt))
	row("provider", st.Provider)
	row("provider_message_id", st.ProviderMessageID)
	row("converted_at", timeText(st.ConvertedAt))
	return tw.Flush()
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// report returns err for main to print; with JSON output it also writes the API's answer to
// w as {"error": ..., "status": ..., "problem": ...}, so scripts can read it.
func report(output string, w io.Writer, err error) error {
	if output != "json" {
		return err
	}
	out := struct {
		Error   string          `json:"error"`
		Status  int             `json:"status,omitempty"`
		Problem *client.Problem `json:"problem,omitempty"`
		Message string          `json:"message,omitempty"`
	}{Error: err.Error()}
	var ae *client.APIError
	if errors.As(err, &ae) {
		out.Status, out.Message = ae.StatusCode, ae.Message
		if ae.Problem.Type != "" {
			out.Problem = &ae.Problem
		}
	}
	if werr := writeJSON(w, out); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
