package workercore

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// Base is what the three workers are built from besides their store and their own
// collaborators: the queue port, the clock, the settings and observability. Each worker embeds
// it, so its fields are set as Base: workercore.Base{...} in the worker's literal. Queue, Clock and
// Settings are required; Log, Metrics and Random are optional.
//
// The store is not part of it: the sweeper needs the due index (DueStore), the other two a
// plain notify.Store.
type Base struct {
	// Queue takes the messages a worker hands on: retries to dispatch, unknown outcomes to
	// reconciliation.
	Queue    notify.Queue
	Clock    notify.Clock
	Settings Settings
	Log      *slog.Logger
	Metrics  *obs.Metrics
	// Random returns floats in [0, 1) for backoff jitter; nil means math/rand/v2. Tests pass
	// a seeded source, so backoff is deterministic.
	Random func() float64

	once sync.Once
	rnd  *locked
}

// Core returns the worker's view of b for one call, as function over store.
func (b *Base) Core(function string, store notify.Store) Core {
	b.once.Do(func() { b.rnd = &locked{rnd: b.Random} })
	return Core{
		function: function, store: store, queue: b.Queue, clock: b.Clock,
		settings: b.Settings, log: b.Log, metrics: b.Metrics, random: b.rnd,
	}
}

// locked serialises a random source shared by a batch's goroutines.
type locked struct {
	mu  sync.Mutex
	rnd func() float64
}

func (l *locked) float() float64 {
	if l == nil || l.rnd == nil {
		return rand.Float64()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rnd()
}

// BatchHandler is an SQS-triggered Lambda handler with partial batch failures, such as
// Dispatcher.Handle and Reconciler.Handle.
type BatchHandler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
