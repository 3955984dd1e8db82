// Package intake assembles the intake function behind the HTTP API (POST, GET and DELETE
// /v1/notifications): the DynamoDB store, the sealing box, the destination and request
// fingerprinters, the abuse guard and the dispatch queue behind notify.Service.
package intake

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/pinpointsmsvoicev2"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/convstore"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/adapters/guardstore"
	"github.com/resetnotify/resetnotify/shared/adapters/sealkeys"
	"github.com/resetnotify/resetnotify/shared/adapters/secretparam"
	"github.com/resetnotify/resetnotify/shared/adapters/smsfeedback"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/intake"
	"github.com/resetnotify/resetnotify/shared/invocation"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/wire"
)

// Function is the intake function.
var Function = wire.Function[*intake.Handler]{Name: "intake", New: New, Handler: func(h *intake.Handler) any { return h.Handle }}

// New builds the intake handler from the configuration env holds.
func New(ctx context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*intake.Handler, error) {
	cfg, err := config.Load(env, config.NeedIntake)
	if err != nil {
		return nil, err
	}
	in, err := Service(ctx, cfg, awsCfg)
	if err != nil {
		return nil, err
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("intake ready", "config", cfg)
	metrics := &obs.Metrics{W: out, Function: "intake", Namespace: cfg.MetricsNamespace}
	if in.Conversions != nil {
		in.Conversions.OnError = func(op string, err error) {
			log.Warn("conversion guard: "+op+" failed", "error", err)
			metrics.Emit(nil, obs.Metric{Name: obs.MetricConversionErrors, Unit: obs.UnitCount, Value: 1})
		}
	}
	return intake.New(in, log, metrics), nil
}

// Service wires the admission service from cfg: what New puts behind the handler, also used
// by the benchmark to measure admission as deployed.
func Service(ctx context.Context, cfg config.Config, awsCfg aws.Config) (*notify.Service, error) {
	var store seal.KeyStore
	if cfg.SealKeysTable != "" {
		store = sealkeys.New(awsclient.DynamoDB(awsCfg, ""), cfg.SealKeysTable)
	}
	keys, err := seal.Source(kms.NewFromConfig(awsCfg), cfg.SealKMSKeyID, store, cfg.SealLocalKey)
	if err != nil {
		return nil, fmt.Errorf("wire.intake %s: %w", config.EnvSealLocalKey, err)
	}
	hasher, fingerprints, err := fingerprinters(ctx, cfg, ssm.NewFromConfig(awsCfg))
	if err != nil {
		return nil, err
	}
	countries, err := notify.NewCountries(cfg.AllowedCountries, phoneregion.Regions{})
	if err != nil {
		return nil, fmt.Errorf("wire.intake %s: %w", config.EnvAllowedCountries, err)
	}
	if countries, err = countries.WithTypes(cfg.AllowedNumberTypes); err != nil {
		return nil, fmt.Errorf("wire.intake %s: %w", config.EnvAllowedNumberTypes, err)
	}
	// The allowed countries' patterns are compiled now, at init, not by their first request.
	phoneregion.Regions{}.Prepare(cfg.AllowedCountries)
	in := &notify.Service{
		Store:        dynamostore.New(awsclient.DynamoDB(awsCfg, ""), cfg.NotificationsTable),
		Sealer:       seal.New(keys),
		Hasher:       hasher,
		Fingerprints: fingerprints,
		// Callers own their keys: the owner's fingerprint is keyed like the request's.
		Owners:   fingerprints,
		Operator: cfg.OperatorPrincipal,
		Queue:    sqsqueue.New(awsclient.SQS(awsCfg, ""), cfg.DispatchQueueURL, ""),
		Clock:    notify.SystemClock{},
		Policy:   cfg.Policy,
		NewID:    func() string { return ulid.Make().String() },
		// The same renderer and budget as dispatch: refuse at once what could never be sent.
		Messages: render.New(cfg.Worker.MaxSegments),
		Actor:    invocation.For("intake"),
		// The abuse guards: the allow-list always, the counters when GUARD_TABLE is set.
		Countries:     countries,
		PrefixDigits:  cfg.Guard.PrefixDigits,
		DecisionBound: cfg.GuardDecision,
	}
	if cfg.GuardTable != "" {
		in.Guard = guardstore.New(awsclient.DynamoDB(awsCfg, ""), cfg.GuardTable, cfg.Guard)
	}
	in.Conversions = Conversions(cfg, awsCfg)
	in.Feedback = Feedback(cfg.Conversion, awsCfg)
	return in, nil
}

// Conversions returns the conversion guard on CONVERSION_TABLE, or nil when it is unset.
func Conversions(cfg config.Config, awsCfg aws.Config) *notify.Conversions {
	c := cfg.Conversion
	if c.Table == "" {
		return nil
	}
	return convstore.Guard(awsclient.DynamoDB(awsCfg, ""), c.Table, c.Policy, notify.SystemClock{})
}

// Feedback returns the provider feedback of the chain: PutMessageFeedback for endusersms, the
// simulator's feedback endpoint for simulator and simulator2, none for another provider; nil
// when no provider of the chain takes feedback.
func Feedback(c config.Conversion, awsCfg aws.Config) notify.Feedback {
	var chain smsfeedback.Chain
	for _, p := range c.FeedbackProviders {
		switch {
		case p == config.SMSEndUserSMS:
			chain = append(chain, smsfeedback.EndUserSMS{API: pinpointsmsvoicev2.NewFromConfig(awsCfg, func(o *pinpointsmsvoicev2.Options) {
				if c.FeedbackEndpoint != "" {
					o.BaseEndpoint = aws.String(c.FeedbackEndpoint)
				}
			})})
		case p == config.SMSSimulator && c.FeedbackSimulatorURL != "":
			chain = append(chain, smsfeedback.Simulator{URL: c.FeedbackSimulatorURL})
		case p == config.SMSSimulator2 && c.FeedbackSimulator2URL != "":
			chain = append(chain, smsfeedback.Simulator{Name: config.SMSSimulator2, URL: c.FeedbackSimulator2URL})
		}
	}
	if len(chain) == 0 {
		return nil
	}
	return chain
}

// fingerprinters builds the destination fingerprinter (keyed by the pepper) and the request
// fingerprinter (keyed by the fingerprint key), refusing one key for both.
func fingerprinters(ctx context.Context, cfg config.Config, params secretparam.API) (*seal.Fingerprinter, *seal.RequestFingerprinter, error) {
	pepper, err := Pepper(ctx, cfg, params)
	if err != nil {
		return nil, nil, err
	}
	hasher, err := seal.NewFingerprinter(pepper)
	if err != nil {
		return nil, nil, fmt.Errorf("wire.intake pepper: %w", err)
	}
	fpKey, err := FingerprintKey(ctx, cfg, params)
	if err != nil {
		return nil, nil, err
	}
	if bytes.Equal(fpKey, pepper) {
		return nil, nil, fmt.Errorf("wire.intake: the request fingerprint key must not be the destination pepper")
	}
	fingerprints, err := seal.NewRequestFingerprinter(fpKey)
	if err != nil {
		return nil, nil, fmt.Errorf("wire.intake fingerprint key: %w", err)
	}
	return hasher, fingerprints, nil
}

// Pepper returns the destination-fingerprint pepper: DESTINATION_PEPPER when set (local runs),
// else the SSM SecureString named by DESTINATION_PEPPER_PARAM, read once with decryption.
func Pepper(ctx context.Context, cfg config.Config, params secretparam.API) ([]byte, error) {
	v, err := secretparam.Resolve(ctx, params, cfg.DestinationPepper, cfg.DestinationPepperParam, config.MinPepperLen)
	if err != nil {
		return nil, fmt.Errorf("wire.pepper %s or %s: %w", config.EnvDestinationPepper, config.EnvDestinationPepperParam, err)
	}
	return v, nil
}

// FingerprintKey returns the request-fingerprint key: REQUEST_FINGERPRINT_KEY when set (local
// runs), else the SSM SecureString named by REQUEST_FINGERPRINT_KEY_PARAM, read once with
// decryption.
func FingerprintKey(ctx context.Context, cfg config.Config, params secretparam.API) ([]byte, error) {
	v, err := secretparam.Resolve(ctx, params, cfg.FingerprintKey, cfg.FingerprintKeyParam, config.MinFingerprintKeyLen)
	if err != nil {
		return nil, fmt.Errorf("wire.fingerprint key %s or %s: %w", config.EnvFingerprintKey, config.EnvFingerprintKeyParam, err)
	}
	return v, nil
}
