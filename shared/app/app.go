// Package app wires the functions' adapters from configuration. Each functions/<name>/main.go
// and the local stack (cmd/local) call the same constructor, so the local run executes exactly
// the wiring that runs in Lambda. Endpoints come from the SDK's usual resolution: in a local
// run the standard AWS_ENDPOINT_URL_* variables point the clients at DynamoDB Local and moto.
package app

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/oklog/ulid/v2"

	"github.com/resetnotify/resetnotify/shared/actor"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/awsclient"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/dynamostore"
	"github.com/resetnotify/resetnotify/shared/guardstore"
	"github.com/resetnotify/resetnotify/shared/httpapi"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/render"
	"github.com/resetnotify/resetnotify/shared/seal"
	"github.com/resetnotify/resetnotify/shared/sqsqueue"
)

// ParameterAPI is the part of the SSM client that Pepper uses.
type ParameterAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// Pepper returns the destination-fingerprint pepper: DESTINATION_PEPPER when set (local runs),
// else the SSM SecureString named by DESTINATION_PEPPER_PARAM, read once with decryption.
func Pepper(ctx context.Context, cfg config.Config, params ParameterAPI) ([]byte, error) {
	if len(cfg.DestinationPepper) > 0 {
		return cfg.DestinationPepper, nil
	}
	if cfg.DestinationPepperParam == "" {
		return nil, fmt.Errorf("app.pepper: neither %s nor %s is set", config.EnvDestinationPepper, config.EnvDestinationPepperParam)
	}
	out, err := params.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(cfg.DestinationPepperParam), WithDecryption: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("app.pepper %s: %w", cfg.DestinationPepperParam, err)
	}
	if out.Parameter == nil || len(aws.ToString(out.Parameter.Value)) < config.MinPepperLen {
		return nil, fmt.Errorf("app.pepper %s: the parameter must hold at least %d bytes", cfg.DestinationPepperParam, config.MinPepperLen)
	}
	return []byte(aws.ToString(out.Parameter.Value)), nil
}

// NewIntakeHandler wires the intake handler: the DynamoDB store, the sealing box, the
// destination fingerprinter and the dispatch queue behind notify.Intake. Logs and metrics go
// to out.
func NewIntakeHandler(ctx context.Context, cfg config.Config, awsCfg aws.Config, out io.Writer) (*httpapi.Handler, error) {
	keys, err := seal.Source(kms.NewFromConfig(awsCfg), cfg.SealKMSKeyID, cfg.SealLocalKey)
	if err != nil {
		return nil, fmt.Errorf("app.intake %s: %w", config.EnvSealLocalKey, err)
	}
	pepper, err := Pepper(ctx, cfg, ssm.NewFromConfig(awsCfg))
	if err != nil {
		return nil, err
	}
	hasher, err := seal.NewFingerprinter(pepper)
	if err != nil {
		return nil, fmt.Errorf("app.intake pepper: %w", err)
	}
	countries, err := notify.NewCountries(cfg.AllowedCallingCodes)
	if err != nil {
		return nil, fmt.Errorf("app.intake %s: %w", config.EnvAllowedCallingCodes, err)
	}
	in := &notify.Intake{
		Store:  dynamostore.New(awsclient.DynamoDB(awsCfg, ""), cfg.NotificationsTable),
		Sealer: seal.New(keys),
		Hasher: hasher,
		Queue:  sqsqueue.New(awsclient.SQS(awsCfg, ""), cfg.DispatchQueueURL),
		Clock:  notify.SystemClock{},
		Policy: cfg.Policy,
		NewID:  func() string { return ulid.Make().String() },
		// The same renderer and budget as dispatch: refuse at once what could never be sent.
		Messages: render.New(cfg.Worker.MaxSegments),
		Actor:    actor.For("intake"),
		// The abuse guards: the allow-list always, the counters when GUARD_TABLE is set.
		Countries:    countries,
		PrefixDigits: cfg.Guard.PrefixDigits,
	}
	if cfg.GuardTable != "" {
		in.Guard = guardstore.New(awsclient.DynamoDB(awsCfg, ""), cfg.GuardTable, cfg.Guard)
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("intake ready", "config", cfg)
	return httpapi.New(in, log, &obs.Metrics{W: out, Function: "intake"}), nil
}

// NewAuditHandler wires the audit writer on the notifications stream. Its settings come
// through getenv (AUDIT_TABLE, AUDIT_RETENTION_DAYS, LOG_LEVEL); function names the actor
// recorded on each entry.
func NewAuditHandler(ctx context.Context, getenv func(string) string, awsCfg aws.Config, function, version string, out io.Writer) (*audit.Handler, error) {
	cfg, err := config.Load(getenv, config.NeedAuditTable)
	if err != nil {
		return nil, err
	}
	retention, err := audit.ParseRetention(getenv(audit.EnvRetentionDays))
	if err != nil {
		return nil, fmt.Errorf("app.audit: %w", err)
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("audit ready", "audit_table", cfg.AuditTable, "retention_days", int(retention.Hours()/24))
	return &audit.Handler{
		Writer:          &audit.Writer{DB: awsclient.DynamoDB(awsCfg, ""), Table: cfg.AuditTable},
		Retention:       retention,
		Function:        function,
		FunctionVersion: version,
		Clock:           notify.SystemClock{},
		Log:             log,
		Metrics:         &obs.Metrics{W: out, Function: "audit"},
	}, nil
}
