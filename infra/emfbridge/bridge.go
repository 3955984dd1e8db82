package emfbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// PutMetricDataAPI is the part of the CloudWatch client the Bridge calls.
type PutMetricDataAPI interface {
	PutMetricData(ctx context.Context, in *cloudwatch.PutMetricDataInput, opts ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricDataOutput, error)
}

// Defaults of a Bridge.
const (
	// MaxBatch is the most datums one PutMetricData carries (CloudWatch allows 1,000 and
	// 1 MB; the functions' datums are small).
	MaxBatch = 500
	// DefaultFlushInterval is how often Run sends what it has.
	DefaultFlushInterval = time.Second
	// maxPending bounds the datums held while CloudWatch is unreachable; older ones are
	// dropped (and counted) first.
	maxPending = 100_000
	// maxLine bounds a partial line held by Write.
	maxLine = 1 << 20
)

// Stats counts what a Bridge has seen and done.
type Stats struct {
	// Lines is every line fed; EMF the EMF lines among them; NotEMF the ordinary log lines;
	// Invalid the EMF lines dropped for breaking the specification.
	Lines, EMF, NotEMF, Invalid int64
	// Datums is the datums parsed; Sent those CloudWatch accepted; Dropped those lost
	// (a failed PutMetricData, or too many pending).
	Datums, Sent, Dropped int64
	// Puts is the PutMetricData calls; PutErrors those that failed.
	Puts, PutErrors int64
}

// Bridge turns EMF lines into PutMetricData calls. Its methods are safe for concurrent use.
type Bridge struct {
	cw PutMetricDataAPI
	// FlushInterval is how often Run flushes; zero means DefaultFlushInterval.
	FlushInterval time.Duration
	// OnError, when set, is told of each failed PutMetricData (the datums are dropped).
	OnError func(error)

	mu      sync.Mutex
	pending map[string][]types.MetricDatum
	npend   int
	partial []byte
	stats   Stats
}

// New returns a Bridge that sends to cw.
func New(cw PutMetricDataAPI) *Bridge {
	return &Bridge{cw: cw, pending: map[string][]types.MetricDatum{}}
}

// Line feeds one line (with or without its newline).
func (b *Bridge) Line(line []byte) {
	batches, err := Parse(line)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Lines++
	switch {
	case errors.Is(err, ErrNotEMF):
		b.stats.NotEMF++
		return
	case err != nil:
		b.stats.EMF++
		b.stats.Invalid++
		return
	}
	b.stats.EMF++
	for _, batch := range batches {
		b.pending[batch.Namespace] = append(b.pending[batch.Namespace], batch.Data...)
		b.npend += len(batch.Data)
		b.stats.Datums += int64(len(batch.Data))
	}
	for b.npend > maxPending {
		for ns, data := range b.pending {
			drop := min(len(data), b.npend-maxPending)
			b.pending[ns] = data[drop:]
			b.npend -= drop
			b.stats.Dropped += int64(drop)
			break
		}
	}
}

// Write feeds p, split into lines; a line's end may come in a later Write. It never fails, so
// that a Bridge can sit beside a function's real output in an io.MultiWriter.
func (b *Bridge) Write(p []byte) (int, error) {
	n := len(p)
	b.mu.Lock()
	buf := append(b.partial, p...)
	b.partial = nil
	b.mu.Unlock()
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		b.Line(buf[:i])
		buf = buf[i+1:]
	}
	if len(buf) > 0 {
		b.mu.Lock()
		if len(b.partial)+len(buf) <= maxLine {
			b.partial = append(b.partial, buf...)
		} else {
			b.partial = nil
		}
		b.mu.Unlock()
	}
	return n, nil
}

// Stats returns the counts so far.
func (b *Bridge) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Flush sends every pending datum, at most MaxBatch per PutMetricData. Datums of a failed
// call are dropped and counted; the error is returned (joined) and told to OnError.
func (b *Bridge) Flush(ctx context.Context) error {
	b.mu.Lock()
	pending := b.pending
	b.pending = map[string][]types.MetricDatum{}
	b.npend = 0
	b.mu.Unlock()
	var errs []error
	for ns, data := range pending {
		for len(data) > 0 {
			chunk := data[:min(len(data), MaxBatch)]
			data = data[len(chunk):]
			_, err := b.cw.PutMetricData(ctx, &cloudwatch.PutMetricDataInput{Namespace: aws.String(ns), MetricData: chunk})
			b.mu.Lock()
			b.stats.Puts++
			if err != nil {
				b.stats.PutErrors++
				b.stats.Dropped += int64(len(chunk))
			} else {
				b.stats.Sent += int64(len(chunk))
			}
			b.mu.Unlock()
			if err != nil {
				err = fmt.Errorf("emfbridge: put %d datums to %s: %w", len(chunk), ns, err)
				if b.OnError != nil {
					b.OnError(err)
				}
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Run flushes every FlushInterval until ctx ends, then once more (with a few seconds of its
// own) so that nothing fed before the end is lost. Failed flushes do not stop it.
func (b *Bridge) Run(ctx context.Context) error {
	every := b.FlushInterval
	if every <= 0 {
		every = DefaultFlushInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = b.Flush(final)
			return nil
		case <-t.C:
			_ = b.Flush(ctx)
		}
	}
}
