// Package reconcile assembles the reconcile function on the reconcile queue. It gives the
// worker the provider's lookup only: it can read the provider's view of an attempt but holds
// nothing that can send (its IAM role has no send permission either). A provider without a
// lookup API (End User Messaging SMS) reconciles through the receipts that provider-events
// records, in the table RECEIPTS_TABLE names.
package reconcile

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/providerevents"
	"github.com/resetnotify/resetnotify/shared/reconcile"
	"github.com/resetnotify/resetnotify/shared/wire"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// Function is the reconcile function.
var Function = wire.Function[*reconcile.Reconciler]{Name: "reconcile", New: New, Handler: func(r *reconcile.Reconciler) any { return r.Handle }}

// New builds the reconcile worker from the configuration env holds.
func New(ctx context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*reconcile.Reconciler, error) {
	w, err := workercorewire.FromEnv(awsCfg, env, out, config.NeedReconcile)
	if err != nil {
		return nil, err
	}
	if w.Receipts, err = ReceiptReader(awsCfg, env); err != nil {
		return nil, err
	}
	r, err := Build(ctx, w)
	if err != nil {
		return nil, err
	}
	r.Log.Info("reconcile ready", "config", w.Config, "providers", w.SMS.Chain)
	return r, nil
}

// Build builds the reconcile worker from w. It takes only each provider's LookupOnly; the
// Senders the provider package also builds are dropped here and never reachable from the
// Reconciler.
func Build(ctx context.Context, w workercorewire.Wiring) (*reconcile.Reconciler, error) {
	p, err := w.Parts("reconcile")
	if err != nil {
		return nil, err
	}
	provs, err := provider.BuildChain(ctx, w.SMS, ssm.NewFromConfig(w.AWS), provider.Deps{AWS: w.AWS, Receipts: w.Receipts, HTTPClient: w.HTTPClient, Clock: w.Clock})
	if err != nil {
		return nil, fmt.Errorf("wire.reconcile: %w", err)
	}
	chain := lookupRoutes(provs)
	return &reconcile.Reconciler{
		Store: p.Store, Lookup: provs[0].Lookup, Receipts: w.Receipts, Provider: provs[0].Name, Chain: chain,
		Base: workercore.Base{Queue: p.Queue, Clock: p.Clock, Settings: p.Settings, Log: p.Log, Metrics: p.Metrics},
	}, nil
}

// lookupRoutes returns the reconcile chain of provs: each provider's lookup only. Sinch does
// not document its lookup as exact, so a "not found" there needs a second one a visibility
// window later (workercore.LookupRoute.ConfirmNotFound).
func lookupRoutes(provs []provider.Provider) []workercore.LookupRoute {
	chain := make([]workercore.LookupRoute, len(provs))
	for i, pr := range provs {
		chain[i] = workercore.LookupRoute{Name: pr.Name, Lookup: pr.Lookup, ConfirmNotFound: pr.Name == config.SMSSinch}
	}
	return chain
}

// ReceiptReader returns the receipts table (RECEIPTS_TABLE, read through env) as an
// sms.ReceiptReader, or nil when RECEIPTS_TABLE is not set. The result is a true nil
// interface then, so sms.ReceiptLookup reports its lookups as inconclusive rather than
// failing.
func ReceiptReader(awsCfg aws.Config, env func(string) string) (sms.ReceiptReader, error) {
	rcfg, err := config.LoadReceipts(env, false)
	if err != nil {
		return nil, fmt.Errorf("wire.receipt reader: %w", err)
	}
	if rcfg.Table == "" {
		return nil, nil
	}
	return providerevents.NewStore(awsclient.DynamoDB(awsCfg, ""), rcfg.Table, rcfg.Retention, notify.SystemClock{}), nil
}
