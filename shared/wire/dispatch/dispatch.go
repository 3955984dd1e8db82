// Package dispatch assembles the dispatch function on the dispatch queue: the DynamoDB store,
// the opener (KMS in AWS, its data keys read from the seal-keys table; the local key otherwise), the renderer with the configured segment
// budget, the provider's Sender and the SQS scheduler. Its SQS handler reports partial batch
// failures.
package dispatch

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/adapters/guardstore"
	"github.com/resetnotify/resetnotify/shared/adapters/sealkeys"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/provider"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dispatch"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/wire"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// Function is the dispatch function.
var Function = wire.Function[*dispatch.Dispatcher]{Name: "dispatch", New: New, Handler: func(d *dispatch.Dispatcher) any { return d.Handle }}

// New builds the dispatch worker from the configuration env holds.
func New(ctx context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*dispatch.Dispatcher, error) {
	w, err := workercorewire.FromEnv(awsCfg, env, out, config.NeedDispatch)
	if err != nil {
		return nil, err
	}
	d, err := Build(ctx, w)
	if err != nil {
		return nil, err
	}
	d.Log.Info("dispatch ready", "config", w.Config, "providers", w.SMS.Chain)
	return d, nil
}

// Build builds the dispatch worker from w.
func Build(ctx context.Context, w workercorewire.Wiring) (*dispatch.Dispatcher, error) {
	p, err := w.Parts("dispatch")
	if err != nil {
		return nil, err
	}
	if err := w.SMS.CheckProtect(); err != nil {
		return nil, fmt.Errorf("wire.dispatch: %w", err)
	}
	var store seal.KeyStore
	if w.Config.SealKeysTable != "" {
		store = sealkeys.New(awsclient.DynamoDB(w.AWS, w.DynamoDBEndpoint), w.Config.SealKeysTable)
	}
	keys, err := seal.Source(kms.NewFromConfig(w.AWS), w.Config.SealKMSKeyID, store, w.Config.SealLocalKey)
	if err != nil {
		return nil, fmt.Errorf("wire.dispatch: %s: %w", config.EnvSealLocalKey, err)
	}
	provs, err := provider.BuildChain(ctx, w.SMS, ssm.NewFromConfig(w.AWS), provider.Deps{AWS: w.AWS, Receipts: w.Receipts, HTTPClient: w.HTTPClient, Clock: w.Clock})
	if err != nil {
		return nil, fmt.Errorf("wire.dispatch: %w", err)
	}
	countries, err := allowList(w.Config)
	if err != nil {
		return nil, err
	}
	chain := make([]workercore.Route, len(provs))
	for i, pr := range provs {
		chain[i] = workercore.Route{Name: pr.Name, Sender: pr.Sender}
	}
	return &dispatch.Dispatcher{
		Store: p.Store, Opener: seal.New(keys), Renderer: render.New(w.Config.Worker.MaxSegments),
		Sender: provs[0].Sender, Provider: provs[0].Name, Chain: chain, Health: workercore.NewHealth(),
		Conversions: conversions(w, p.Clock), Guard: guard(w), Countries: countries,
		Base: workercore.Base{Queue: p.Queue, Clock: p.Clock, Settings: p.Settings, Log: p.Log, Metrics: p.Metrics},
	}, nil
}

// allowList returns intake's allow-list of countries and number types, which dispatch
// re-checks every sealed number against.
func allowList(cfg config.Config) (notify.Countries, error) {
	countries, err := notify.NewCountries(cfg.AllowedCountries, phoneregion.Regions{})
	if err != nil {
		return notify.Countries{}, fmt.Errorf("wire.dispatch %s: %w", config.EnvAllowedCountries, err)
	}
	if len(cfg.AllowedNumberTypes) == 0 {
		// A configuration built without the variable (config.Load always fills the default).
		cfg.AllowedNumberTypes = notify.DefaultNumberTypes
	}
	if countries, err = countries.WithTypes(cfg.AllowedNumberTypes); err != nil {
		return notify.Countries{}, fmt.Errorf("wire.dispatch %s: %w", config.EnvAllowedNumberTypes, err)
	}
	phoneregion.Regions{}.Prepare(cfg.AllowedCountries)
	return countries, nil
}

// guard returns the abuse guard on GUARD_TABLE, the intake's, or nil when it is off.
func guard(w workercorewire.Wiring) notify.Guard {
	if w.Config.GuardTable == "" {
		return nil
	}
	return guardstore.New(awsclient.DynamoDB(w.AWS, w.DynamoDBEndpoint), w.Config.GuardTable, w.Config.Guard)
}

// conversions returns the conversion guard that counts sends, or nil without CONVERSION_TABLE.
// Its table is a DynamoDB table like the store's, at the same endpoint.
func conversions(w workercorewire.Wiring, clock notify.Clock) *notify.Conversions {
	c := w.Config.Conversion
	if c.Table == "" {
		return nil
	}
	return convstore.Guard(awsclient.DynamoDB(w.AWS, w.DynamoDBEndpoint), c.Table, c.Policy, clock)
}
