package receipts

import (
	"github.com/resetnotify/resetnotify/shared/config"
)

// The provider-events function's variables are named and parsed by package config
// (config.LoadReceipts). These aliases keep the names cmd/bench and the policy checks use.
const (
	EnvTable             = config.EnvReceiptsTable
	EnvRetentionDays     = config.EnvReceiptRetentionDays
	EnvWebhookToken      = config.EnvSimulatorWebhookToken
	EnvWebhookTokenParam = config.EnvSimulatorWebhookTokenParam
)

// MinWebhookTokenLen is the shortest webhook token accepted, in bytes.
const MinWebhookTokenLen = config.MinWebhookTokenLen
