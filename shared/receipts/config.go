package receipts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The environment variables of the provider-events function beyond package config's, as
// template.yaml sets them.
const (
	// EnvTable names the receipts table. The reconcile function reads it too.
	EnvTable = "RECEIPTS_TABLE"
	// EnvRetentionDays is how many days a receipt is kept (default 7).
	EnvRetentionDays = "RECEIPT_RETENTION_DAYS"
	// EnvWebhookToken is the shared token of the simulator's webhook, for local runs. Empty
	// (and no EnvWebhookTokenParam) disables the webhook.
	EnvWebhookToken = "SIMULATOR_WEBHOOK_TOKEN"
	// EnvWebhookTokenParam names the SSM SecureString that holds the token in AWS; the
	// wiring reads it once at cold start.
	EnvWebhookTokenParam = "SIMULATOR_WEBHOOK_TOKEN_PARAM"
)

// MinWebhookTokenLen is the shortest webhook token accepted, in bytes.
const MinWebhookTokenLen = 16

// Config is the provider-events configuration. WebhookToken is a secret: String hides it.
type Config struct {
	Table        string
	Retention    time.Duration
	WebhookToken []byte
	// WebhookTokenParam names the SSM SecureString of the token; used when WebhookToken is
	// empty.
	WebhookTokenParam string
}

// ConfigFromEnv reads the variables through getenv. RECEIPTS_TABLE is required only when
// needTable is true (provider-events needs it; a reconcile function may run without it).
// Problems are reported by variable name, never with a value.
func ConfigFromEnv(getenv func(string) string, needTable bool) (Config, error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	c := Config{Table: get(EnvTable), Retention: DefaultRetention}
	var errs []error
	if c.Table == "" && needTable {
		errs = append(errs, fmt.Errorf("%s is required", EnvTable))
	}
	if v := get(EnvRetentionDays); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 3650 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of days from 1 to 3650", EnvRetentionDays))
		}
		c.Retention = time.Duration(n) * 24 * time.Hour
	}
	if v := getenv(EnvWebhookToken); v != "" {
		if len(v) < MinWebhookTokenLen {
			errs = append(errs, fmt.Errorf("%s must be at least %d bytes", EnvWebhookToken, MinWebhookTokenLen))
		}
		c.WebhookToken = []byte(v)
	} else {
		c.WebhookTokenParam = get(EnvWebhookTokenParam)
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("receipts.config: %w", err)
	}
	return c, nil
}

// String describes the configuration without the token.
func (c Config) String() string {
	webhook := "disabled"
	switch {
	case len(c.WebhookToken) > 0:
		webhook = "enabled"
	case c.WebhookTokenParam != "":
		webhook = "token-from-ssm"
	}
	return fmt.Sprintf("receipts_table=%s retention=%s simulator_webhook=%s", c.Table, c.Retention, webhook)
}
