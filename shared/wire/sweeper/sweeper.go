// Package sweeper assembles the sweeper, run every minute by an EventBridge schedule: each run
// reads every shard of the due index and re-enqueues, expires or reclaims the overdue
// records. It needs the provider's timeout and visibility window (to time reconciliation of a
// lease that ran out) but no provider adapter.
package sweeper

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/sweeper"
	"github.com/resetnotify/resetnotify/shared/wire"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// Function is the sweeper function.
var Function = wire.Function[*sweeper.Sweeper]{Name: "sweeper", New: New, Handler: func(s *sweeper.Sweeper) any { return s.Handle }}

// New builds the sweeper from the configuration env holds.
func New(_ context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*sweeper.Sweeper, error) {
	w, err := workercorewire.FromEnv(awsCfg, env, out, config.NeedSweeper)
	if err != nil {
		return nil, err
	}
	s, err := Build(w)
	if err != nil {
		return nil, err
	}
	s.Log.Info("sweeper ready", "config", w.Config)
	return s, nil
}

// Build builds the sweeper from w.
func Build(w workercorewire.Wiring) (*sweeper.Sweeper, error) {
	p, err := w.Parts("sweeper")
	if err != nil {
		return nil, err
	}
	return &sweeper.Sweeper{
		Store: p.Store,
		Base:  workercore.Base{Queue: p.Queue, Clock: p.Clock, Settings: p.Settings, Log: p.Log, Metrics: p.Metrics},
	}, nil
}
