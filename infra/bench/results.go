package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// results passes every line through to the output and keeps each name=value line's figure,
// so a run can also be written as JSON (save) and compared with another.
type results struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte
	order   []string
	values  map[string]any
}

func newResults(out io.Writer) *results { return &results{out: out, values: map[string]any{}} }

func (r *results) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.partial = append(r.partial, p...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		r.keep(string(r.partial[:i]))
		r.partial = r.partial[i+1:]
	}
	return r.out.Write(p)
}

// keep records "name=value": a number as a number, anything else as a string.
func (r *results) keep(line string) {
	i := bytes.IndexByte([]byte(line), '=')
	if i <= 0 {
		return
	}
	name, value := line[:i], line[i+1:]
	if _, seen := r.values[name]; !seen {
		r.order = append(r.order, name)
	}
	if f, err := strconv.ParseFloat(value, 64); err == nil {
		r.values[name] = f
	} else {
		r.values[name] = value
	}
}

// Figures returns the figures kept so far.
func (r *results) Figures() map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]any, len(r.values))
	for k, v := range r.values {
		out[k] = v
	}
	return out
}

// save writes the figures to path as one JSON object ({"mode", "finished_at", "figures"}) and
// prints the path as bench_json=<path>.
func (r *results) save(path, mode string) error {
	doc := struct {
		Mode       string         `json:"mode"`
		FinishedAt string         `json:"finished_at"`
		Figures    map[string]any `json:"figures"`
	}{mode, time.Now().UTC().Format(time.RFC3339), r.Figures()}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	_, err = fmt.Fprintf(r, "bench_json=%s\n", abs)
	return err
}
