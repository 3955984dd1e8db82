// Package app wires the functions' adapters from configuration. Each functions/<name>/main.go
// and the local stack (cmd/local) call the same constructor, so the local run executes exactly
// the wiring that runs in Lambda. Endpoints come from the SDK's usual resolution: in a local
// run the standard AWS_ENDPOINT_URL_* variables point the clients at DynamoDB Local and moto.
package app

import (
	"bytes"
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
	"github.com/resetnotify/resetnotify/shared/secretparam"
	"github.com/resetnotify/resetnotify/shared/sqsqueue"
)

// ParameterAPI is the part of the SSM client that Pepper and FingerprintKey use.
type ParameterAPI = secretparam.API

// Pepper returns the destination-fingerprint pepper: DESTINATION_PEPPER when set (local runs),
// else the SSM SecureString named by DESTINATION_PEPPER_PARAM, read once with decryption.
func Pepper(ctx context.Context, cfg config.Config, params ParameterAPI) ([]byte, error) {
	if len(cfg.DestinationPepper) > 0 {
		return cfg.DestinationPepper, nil
	}
	if cfg.DestinationPepperParam == "" {
		return nil, fmt.Errorf("app.pepper: neither %s nor %s is set", config.EnvDestinationPepper, config.EnvDestinationPepperParam)
	}
	v, err := secretparam.Read(ctx, params, cfg.DestinationPepperParam, config.MinPepperLen)
	if err != nil {
		return nil, fmt.Errorf("app.pepper: %w", err)
	}
	return v, nil
}

// FingerprintKey returns the request-fingerprint key: REQUEST_FINGERPRINT_KEY when set (local
// runs), else the SSM SecureString named by REQUEST_FINGERPRINT_KEY_PARAM, read once with
// decryption.
func FingerprintKey(ctx context.Context, cfg config.Config, params ParameterAPI) ([]byte, error) {
	if len(cfg.FingerprintKey) > 0 {
		return cfg.FingerprintKey, nil
	}
	if cfg.FingerprintKeyParam == "" {
		return nil, fmt.Errorf("app.fingerprint key: neither %s nor %s is set", config.EnvFingerprintKey, config.EnvFingerprintKeyParam)
	}
	v, err := secretparam.Read(ctx, params, cfg.FingerprintKeyParam, config.MinFingerprintKeyLen)
	if err != nil {
		return nil, fmt.Errorf("app.fingerprint key: %w", err)
	}
	return v, nil
}

// NewIntakeHandler wires the intake handler: the DynamoDB store, the sealing box, the
// destination and request fingerprinters and the dispatch queue behind notify.Intake. Logs and metrics go
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
	fpKey, err := FingerprintKey(ctx, cfg, ssm.NewFromConfig(awsCfg))
	if err != nil {
		return nil, err
	}
	if bytes.Equal(fpKey, pepper) {
		return nil, fmt.Errorf("app.intake: the request fingerprint key must not be the destination pepper")
	}
	fingerprints, err := seal.NewRequestFingerprinter(fpKey)
	if err != nil {
		return nil, fmt.Errorf("app.intake fingerprint key: %w", err)
	}
	countries, err := notify.NewCountries(cfg.AllowedCallingCodes)
	if err != nil {
		return nil, fmt.Errorf("app.intake %s: %w", config.EnvAllowedCallingCodes, err)
	}
	in := &notify.Intake{
		Store:        dynamostore.New(awsclient.DynamoDB(awsCfg, ""), cfg.NotificationsTable),
		Sealer:       seal.New(keys),
		Hasher:       hasher,
		Fingerprints: fingerprints,
		Queue:        sqsqueue.New(awsclient.SQS(awsCfg, ""), cfg.DispatchQueueURL, ""),
		Clock:        notify.SystemClock{},
		Policy:       cfg.Policy,
		NewID:        func() string { return ulid.Make().String() },
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

// NewDigester wires the digest step over the audit table. Its settings come through getenv:
// AUDIT_TABLE, AUDIT_RETENTION_DAYS, AUDIT_DIGEST_PERIOD_MINUTES, AUDIT_DIGEST_GRACE_SECONDS,
// and the signing key: AUDIT_DIGEST_KMS_KEY_ID in AWS, or AUDIT_DIGEST_LOCAL_KEY (a PEM)
// locally. Errors name the variables, never the key.
func NewDigester(getenv func(string) string, awsCfg aws.Config, out io.Writer) (*audit.Digester, error) {
	cfg, err := config.Load(getenv, config.NeedAuditTable)
	if err != nil {
		return nil, err
	}
	retention, err := audit.ParseRetention(getenv(audit.EnvRetentionDays))
	if err != nil {
		return nil, fmt.Errorf("app.digest: %w", err)
	}
	settings, err := audit.ParseDigestSettings(getenv)
	if err != nil {
		return nil, fmt.Errorf("app.digest: %w", err)
	}
	signer, err := digestSigner(getenv, awsCfg)
	if err != nil {
		return nil, err
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("digest ready", "audit_table", cfg.AuditTable, "key_id", signer.KeyID(),
		"period_s", int(settings.Period.Seconds()), "grace_s", int(settings.Grace.Seconds()))
	return &audit.Digester{
		DB: awsclient.DynamoDB(awsCfg, ""), Table: cfg.AuditTable, Signer: signer,
		Period: settings.Period, Grace: settings.Grace, Retention: retention,
		Clock: notify.SystemClock{}, Log: log, Metrics: &obs.Metrics{W: out, Function: "digest"},
	}, nil
}

// digestSigner returns the KMS signer in AWS, or the local key's signer.
func digestSigner(getenv func(string) string, awsCfg aws.Config) (audit.Signer, error) {
	keyID, local := getenv(audit.EnvDigestKMSKeyID), getenv(audit.EnvDigestLocalKey)
	switch {
	case keyID != "" && local != "":
		return nil, fmt.Errorf("app.digest: set only one of %s and %s", audit.EnvDigestKMSKeyID, audit.EnvDigestLocalKey)
	case keyID != "":
		return audit.KMSSigner{KMS: kms.NewFromConfig(awsCfg), Key: keyID}, nil
	case local != "":
		key, err := audit.ParsePrivateKeyPEM([]byte(local))
		if err != nil {
			return nil, fmt.Errorf("app.digest %s: %w", audit.EnvDigestLocalKey, err)
		}
		return audit.LocalSigner{Key: key}, nil
	}
	return nil, fmt.Errorf("app.digest: %s (in AWS) or %s (locally) is required", audit.EnvDigestKMSKeyID, audit.EnvDigestLocalKey)
}

// NewAuditReplayer wires the replay of lost stream batches (the audit-replay function on the
// audit function's on-failure queue). Its settings come through getenv (NOTIFICATIONS_TABLE,
// AUDIT_TABLE, AUDIT_RETENTION_DAYS, LOG_LEVEL); function names the actor of the entries it
// writes.
func NewAuditReplayer(getenv func(string) string, awsCfg aws.Config, function, version string, out io.Writer) (*audit.Replayer, error) {
	cfg, err := config.Load(getenv, config.NeedAuditTable|config.NeedNotificationsTable)
	if err != nil {
		return nil, err
	}
	retention, err := audit.ParseRetention(getenv(audit.EnvRetentionDays))
	if err != nil {
		return nil, fmt.Errorf("app.audit replay: %w", err)
	}
	db := awsclient.DynamoDB(awsCfg, "")
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("audit replay ready", "audit_table", cfg.AuditTable, "notifications_table", cfg.NotificationsTable)
	return &audit.Replayer{
		Streams:            awsclient.Streams(awsCfg, ""),
		Writer:             &audit.Writer{DB: db, Table: cfg.AuditTable},
		Reader:             &audit.Reader{DB: db, Table: cfg.AuditTable},
		Records:            dynamostore.New(db, cfg.NotificationsTable),
		Scan:               db,
		NotificationsTable: cfg.NotificationsTable,
		Retention:          retention,
		Function:           function,
		FunctionVersion:    version,
		Clock:              notify.SystemClock{},
		Log:                log,
		Metrics:            &obs.Metrics{W: out, Function: "audit-replay"},
	}, nil
}
