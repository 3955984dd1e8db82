package main

import (
	"context"

	"github.com/resetnotify/resetnotify/infra/gameday"
)

// newWatcher returns the alarm evaluator the game day uses, and its name for the report.
func newWatcher(ctx context.Context, s *gameday.Stack) (gameday.AlarmWatcher, string, error) {
	w, err := gameday.NewEvalWatcher(ctx, s)
	return w, gameday.Evaluator, err
}
