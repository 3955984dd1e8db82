// Package audit assembles the audit function on the notifications table's stream: one
// redacted, hash-chained audit entry per transition (see package shared/audit).
package audit

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/audit"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/wire"
)

// Function is the audit function.
var Function = wire.Function[*audit.Handler]{Name: "audit", New: New, Handler: func(h *audit.Handler) any { return h.Handle }}

// New builds the audit writer from env: AUDIT_TABLE, AUDIT_RETENTION_DAYS, AUDIT_HOT_DAYS, LOG_LEVEL, and the
// function's name and version that Lambda sets (AWS_LAMBDA_FUNCTION_NAME,
// AWS_LAMBDA_FUNCTION_VERSION), recorded as the actor of each entry.
func New(_ context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*audit.Handler, error) {
	cfg, err := config.Load(env, config.NeedAuditTable)
	if err != nil {
		return nil, err
	}
	retention := cfg.AuditRetention
	hot, err := config.AuditHot(env)
	if err != nil {
		return nil, fmt.Errorf("wire.audit: %w", err)
	}
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("audit ready", "audit_table", cfg.AuditTable, "retention_days", int(retention.Hours()/24))
	return &audit.Handler{
		Writer:          &auditlog.Writer{DB: awsclient.DynamoDB(awsCfg, ""), Table: cfg.AuditTable, Hot: hot, Retention: retention},
		Retention:       retention,
		Function:        env(config.EnvLambdaFunctionName),
		FunctionVersion: env(config.EnvLambdaFunctionVersion),
		Clock:           notify.SystemClock{},
		Log:             log,
		Metrics:         &obs.Metrics{W: out, Function: "audit", Namespace: cfg.MetricsNamespace},
	}, nil
}
