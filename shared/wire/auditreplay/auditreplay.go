// Package auditreplay assembles the audit-replay function on the audit function's on-failure
// queue: each message names a stream batch the audit function gave up on, and the function
// re-reads it from the stream and writes the missing audit entries, or, once the stream no
// longer holds the records, a reconstructed gap entry per affected notification (see
// auditreplay.Replayer).
package auditreplay

import (
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/streamsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/dynamostore"
	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/auditreplay"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/wire"
)

// Function is the audit-replay function.
var Function = wire.Function[*auditreplay.Replayer]{Name: "audit-replay", New: New, Handler: func(r *auditreplay.Replayer) any { return r.Handle }}

// New builds the replay from env: NOTIFICATIONS_TABLE, AUDIT_TABLE, AUDIT_RETENTION_DAYS,
// LOG_LEVEL, and the function's name and version that Lambda sets, recorded as the actor of
// the entries it writes.
func New(_ context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (*auditreplay.Replayer, error) {
	cfg, err := config.Load(env, config.NeedAuditTable|config.NeedNotificationsTable)
	if err != nil {
		return nil, err
	}
	retention := cfg.AuditRetention
	hot, err := config.AuditHot(env)
	if err != nil {
		return nil, fmt.Errorf("wire.auditreplay: %w", err)
	}
	db := awsclient.DynamoDB(awsCfg, "")
	log := obs.NewLogger(out, cfg.LogLevel)
	log.Info("audit replay ready", "audit_table", cfg.AuditTable, "notifications_table", cfg.NotificationsTable)
	return &auditreplay.Replayer{
		Streams:            streamsclient.New(awsCfg, ""),
		Writer:             &auditlog.Writer{DB: db, Table: cfg.AuditTable, Hot: hot, Retention: retention},
		Reader:             &auditlog.Reader{DB: db, Table: cfg.AuditTable},
		Records:            dynamostore.New(db, cfg.NotificationsTable),
		Scan:               db,
		NotificationsTable: cfg.NotificationsTable,
		Retention:          retention,
		Function:           env(config.EnvLambdaFunctionName),
		FunctionVersion:    env(config.EnvLambdaFunctionVersion),
		Clock:              notify.SystemClock{},
		Log:                log,
		Metrics:            &obs.Metrics{W: out, Function: "audit-replay", Namespace: cfg.MetricsNamespace},
	}, nil
}
