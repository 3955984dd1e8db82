// Package digest assembles the digest function, run every minute by an EventBridge schedule:
// it closes each audit period that has ended (plus a grace) with a signed digest item in the
// audit table (see package shared/digest, and docs/audit.md).
package digest

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/s3client"
	"github.com/resetnotify/resetnotify/shared/archive"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/wire"
)

// Function is the digest function.
var Function = wire.Function[*digest.Digester]{Name: "digest", New: New, Handler: func(d *digest.Digester) any { return d.Handle }}

// New builds the digest step from env: AUDIT_TABLE, AUDIT_RETENTION_DAYS,
// AUDIT_DIGEST_PERIOD_MINUTES, AUDIT_DIGEST_GRACE_SECONDS, AUDIT_DIGEST_LAG_BOUND_SECONDS,
// AUDIT_HOT_DAYS, AUDIT_ARCHIVE_BUCKET (unset: no archive step), and the signing key:
// AUDIT_DIGEST_KMS_KEY_ID in AWS, or AUDIT_DIGEST_LOCAL_KEY (a PEM) locally. Errors name the
// variables, never the key.
func New(_ context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*digest.Digester, error) {
	cfg, err := config.Load(env, config.NeedAuditTable)
	if err != nil {
		return nil, err
	}
	retention := cfg.AuditRetention
	settings, err := config.LoadDigest(env)
	if err != nil {
		return nil, fmt.Errorf("wire.digest: %w", err)
	}
	signer, err := signer(env, awsCfg)
	if err != nil {
		return nil, err
	}
	hot, err := config.AuditHot(env)
	if err != nil {
		return nil, fmt.Errorf("wire.digest: %w", err)
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	bucket := env(config.EnvAuditArchiveBucket)
	log.Info("digest ready", "audit_table", cfg.AuditTable, "key_id", signer.KeyID(),
		"period_s", int(settings.Period.Seconds()), "grace_s", int(settings.Grace.Seconds()),
		"lag_bound_s", int(settings.LagBound.Seconds()), "archive_bucket", bucket, "hot_days", int(hot.Hours()/24))
	db := awsclient.DynamoDB(awsCfg, "")
	metrics := &obs.Metrics{W: out, Function: "digest", Namespace: cfg.MetricsNamespace}
	d := &digest.Digester{
		DB: db, Table: cfg.AuditTable, Signer: signer,
		Period: settings.Period, Grace: settings.Grace, Retention: retention, LagBound: settings.LagBound,
		Clock: notify.SystemClock{}, Log: log, Metrics: metrics,
	}
	if bucket != "" {
		d.Archiver = &archive.Archiver{DB: db, Table: cfg.AuditTable, S3: s3client.New(awsCfg, ""), Bucket: bucket,
			Signer: signer, Algorithm: digest.SigningAlgorithm, Hot: hot, Retention: retention,
			Clock: notify.SystemClock{}, Log: log, Metrics: metrics}
	}
	return d, nil
}

// signer returns the KMS signer in AWS, or the local key's signer.
func signer(env func(string) string, awsCfg aws.Config) (digest.Signer, error) {
	k, err := config.LoadDigestKey(env)
	if err != nil {
		return nil, fmt.Errorf("wire.digest: %w", err)
	}
	if k.KMSKeyID != "" {
		return digest.KMSSigner{KMS: kms.NewFromConfig(awsCfg), Key: k.KMSKeyID}, nil
	}
	key, err := digest.ParsePrivateKeyPEM(k.LocalPEM)
	if err != nil {
		return nil, fmt.Errorf("wire.digest %s: %w", config.EnvAuditDigestLocalKey, err)
	}
	return digest.LocalSigner{Key: key}, nil
}
