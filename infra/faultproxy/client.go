package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// ControlPrefix is the path under which the proxy serves its control API on the listener it
// proxies on. No AWS API uses it: S3 bucket names cannot hold an underscore, and no other
// service the stack calls has a path of its own.
const ControlPrefix = "/_faultproxy/"

// The control API, under ControlPrefix:
//
//	GET    rules    the rules in force: {"rules": [...]}
//	PUT    rules    replaces them with the body's {"rules": [...]}
//	POST   rules    adds the body's rules after them
//	DELETE rules    removes every rule
//	GET    counts   Counts
//	DELETE counts   resets the counts
//	GET    healthz  204
type rulesBody struct {
	Rules []Rule `json:"rules"`
}

// Client drives a proxy's control API.
type Client struct {
	base string
	http *http.Client
}

// NewClient returns a Client of the proxy at baseURL (its listener, e.g.
// $RESETNOTIFY_FAULT_PROXY_URL).
func NewClient(baseURL string) *Client {
	return &Client{base: strings.TrimSuffix(baseURL, "/"), http: &http.Client{}}
}

// Set replaces the proxy's rules with rules (none: the same as Clear). Each rule's For runs
// from now.
func (c *Client) Set(ctx context.Context, rules ...Rule) error {
	return c.do(ctx, http.MethodPut, "rules", rulesBody{Rules: nonNil(rules)}, nil)
}

// Add appends rules after those in force.
func (c *Client) Add(ctx context.Context, rules ...Rule) error {
	return c.do(ctx, http.MethodPost, "rules", rulesBody{Rules: nonNil(rules)}, nil)
}

// Clear removes every rule: from now on every request is forwarded untouched.
func (c *Client) Clear(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "rules", nil, nil)
}

// Rules returns the rules in force.
func (c *Client) Rules(ctx context.Context) ([]Rule, error) {
	var b rulesBody
	err := c.do(ctx, http.MethodGet, "rules", nil, &b)
	return b.Rules, err
}

// Counts returns what the proxy did since it started or its counts were last reset.
func (c *Client) Counts(ctx context.Context) (Counts, error) {
	var n Counts
	err := c.do(ctx, http.MethodGet, "counts", nil, &n)
	return n, err
}

// ResetCounts sets every count back to zero.
func (c *Client) ResetCounts(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "counts", nil, nil)
}

func nonNil(rules []Rule) []Rule {
	if rules == nil {
		return []Rule{}
	}
	return rules
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+ControlPrefix+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("faultproxy %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("faultproxy %s %s: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("faultproxy %s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("faultproxy %s %s: %w", method, path, err)
		}
	}
	return nil
}
