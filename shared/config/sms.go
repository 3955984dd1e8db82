package config

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// The SMS provider's variables, read by the functions that talk to the provider (dispatch,
// reconcile) and by the sweeper, which times reconciliation with SMS_TIMEOUT and
// SMS_VISIBILITY_SECONDS. Package sms/provider builds the adapter SMS names.
const (
	EnvSMSProvider          = "SMS_PROVIDER"
	EnvSMSTimeout           = "SMS_TIMEOUT"
	EnvSMSVisibilitySeconds = "SMS_VISIBILITY_SECONDS"

	EnvSMSSimulatorURL   = "SMS_SIMULATOR_URL"
	EnvSMSSimulatorToken = "SMS_SIMULATOR_TOKEN"

	EnvSMSOriginationIdentity  = "SMS_ORIGINATION_IDENTITY"
	EnvSMSConfigurationSet     = "SMS_CONFIGURATION_SET"
	EnvSMSProtectConfiguration = "SMS_PROTECT_CONFIGURATION_ID"
	EnvSMSEndpoint             = "SMS_ENDPOINT"

	EnvSinchBaseURL       = "SINCH_BASE_URL"
	EnvSinchServicePlanID = "SINCH_SERVICE_PLAN_ID"
	EnvSinchAPIToken      = "SINCH_API_TOKEN"
	EnvSinchAPITokenParam = "SINCH_API_TOKEN_PARAM"
	EnvSinchFrom          = "SINCH_FROM"
	EnvSinchCallbackURL   = "SINCH_CALLBACK_URL"
)

// The provider kinds SMS_PROVIDER names. Package sms/provider checks that they are its
// adapters' names.
const (
	SMSSimulator  = "simulator"
	SMSEndUserSMS = "endusersms"
	SMSSinch      = "sinch"
)

// DefaultSMSTimeout bounds one provider call when SMS_TIMEOUT is not set.
const DefaultSMSTimeout = 5 * time.Second

// DefaultSinchBaseURL is Sinch's US region.
const DefaultSinchBaseURL = "https://us.sms.api.sinch.com"

// EndUserSMSMinValidity is the shortest validity period AWS End User Messaging SMS accepts
// (its MinTTLSeconds); package sms/provider checks it against the adapter's.
const EndUserSMSMinValidity = 5 * time.Second

// DefaultSMSVisibility returns the visibility window of kind when none is configured.
func DefaultSMSVisibility(kind string) time.Duration {
	switch kind {
	case SMSEndUserSMS:
		// Events travel service → SNS → provider-events → table; give them minutes.
		return 5 * time.Minute
	case SMSSinch:
		return time.Minute
	}
	return 0
}

// SMS is the SMS provider's configuration. SinchAPIToken and SimulatorToken are secrets:
// SMS implements fmt.Stringer, fmt.GoStringer and slog.LogValuer without them.
type SMS struct {
	Kind       string
	Timeout    time.Duration
	Visibility time.Duration

	SimulatorURL   string
	SimulatorToken string

	OriginationIdentity  string
	ConfigurationSetName string
	// ProtectConfigurationID is SMS_PROTECT_CONFIGURATION_ID, the protect configuration every
	// End User Messaging send names (its country rules); empty names none.
	ProtectConfigurationID string
	Endpoint               string

	SinchBaseURL       string
	SinchServicePlanID string
	SinchAPIToken      string
	// SinchAPITokenParam names the SSM SecureString that holds SinchAPIToken in AWS.
	SinchAPITokenParam string
	SinchFrom          string
	SinchCallbackURL   string
}

// LoadSMS reads the SMS provider's variables through getenv and checks what the chosen kind
// needs.
func LoadSMS(getenv func(string) string) (SMS, error) {
	get := trimmed(getenv)
	cfg := SMS{
		Kind:                   strings.ToLower(get(EnvSMSProvider)),
		Timeout:                DefaultSMSTimeout,
		SimulatorURL:           get(EnvSMSSimulatorURL),
		SimulatorToken:         get(EnvSMSSimulatorToken),
		OriginationIdentity:    get(EnvSMSOriginationIdentity),
		ConfigurationSetName:   get(EnvSMSConfigurationSet),
		ProtectConfigurationID: get(EnvSMSProtectConfiguration),
		Endpoint:               get(EnvSMSEndpoint),
		SinchBaseURL:           get(EnvSinchBaseURL),
		SinchServicePlanID:     get(EnvSinchServicePlanID),
		SinchAPIToken:          get(EnvSinchAPIToken),
		SinchAPITokenParam:     get(EnvSinchAPITokenParam),
		SinchFrom:              get(EnvSinchFrom),
		SinchCallbackURL:       get(EnvSinchCallbackURL),
	}
	errs := cfg.loadTimings(get)
	if cfg.SinchBaseURL == "" {
		cfg.SinchBaseURL = DefaultSinchBaseURL
	}
	errs = append(errs, cfg.Validate())
	if err := errors.Join(errs...); err != nil {
		return SMS{}, fmt.Errorf("config.sms: %w", err)
	}
	return cfg, nil
}

// loadTimings reads SMS_TIMEOUT and SMS_VISIBILITY_SECONDS (whose default depends on Kind).
func (cfg *SMS) loadTimings(get func(string) string) []error {
	var errs []error
	if v := get(EnvSMSTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s must be a positive duration such as 5s or 800ms", EnvSMSTimeout))
		}
		cfg.Timeout = d
	}
	cfg.Visibility = DefaultSMSVisibility(cfg.Kind)
	if v := get(EnvSMSVisibilitySeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of seconds, 0 or more", EnvSMSVisibilitySeconds))
		}
		cfg.Visibility = time.Duration(n) * time.Second
	}
	return errs
}

// Validate reports what cfg lacks for its kind. Its errors name variables, never values.
func (cfg SMS) Validate() error {
	var errs []error
	need := func(v, name string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required for %s=%s", name, EnvSMSProvider, cfg.Kind))
		}
	}
	switch cfg.Kind {
	case SMSSimulator:
		need(cfg.SimulatorURL, EnvSMSSimulatorURL)
	case SMSEndUserSMS:
		need(cfg.OriginationIdentity, EnvSMSOriginationIdentity)
	case SMSSinch:
		need(cfg.SinchServicePlanID, EnvSinchServicePlanID)
		if cfg.SinchAPIToken == "" && cfg.SinchAPITokenParam == "" {
			errs = append(errs, fmt.Errorf("%s or %s is required for %s=%s", EnvSinchAPIToken, EnvSinchAPITokenParam, EnvSMSProvider, cfg.Kind))
		}
		need(cfg.SinchFrom, EnvSinchFrom)
	case "":
		errs = append(errs, fmt.Errorf("%s is not set", EnvSMSProvider))
	default:
		// The kind is not a secret: naming it helps the operator find the typo.
		errs = append(errs, fmt.Errorf("%s %q is not one of %s, %s, %s", EnvSMSProvider, cfg.Kind, SMSSimulator, SMSEndUserSMS, SMSSinch))
	}
	return errors.Join(errs...)
}

// MinValidity returns the shortest validity period cfg's provider accepts: a send with less
// is refused before it leaves the process. Providers that count validity in whole seconds
// accept no less than a second.
func (cfg SMS) MinValidity() time.Duration {
	if cfg.Kind == SMSEndUserSMS {
		return EndUserSMSMinValidity
	}
	return time.Second
}

// String describes cfg with its secrets (the Sinch API token, the simulator token) replaced,
// so that logging or printing it never shows them.
func (cfg SMS) String() string {
	return fmt.Sprintf("kind=%s timeout=%s visibility=%s simulator_url=%s simulator_token=%s origination_identity=%s configuration_set=%s protect_configuration=%s sinch_base_url=%s sinch_service_plan_id=%s sinch_api_token=%s sinch_from=%s",
		cfg.Kind, cfg.Timeout, cfg.Visibility, cfg.SimulatorURL, secretState(cfg.SimulatorToken, ""), cfg.OriginationIdentity,
		cfg.ConfigurationSetName, cfg.ProtectConfigurationID, cfg.SinchBaseURL, cfg.SinchServicePlanID, secretState(cfg.SinchAPIToken, cfg.SinchAPITokenParam), cfg.SinchFrom)
}

// GoString keeps %#v from printing the secrets too.
func (cfg SMS) GoString() string { return "config.SMS{" + cfg.String() + "}" }

// LogValue describes cfg for slog with its secrets replaced.
func (cfg SMS) LogValue() slog.Value { return slog.StringValue(cfg.String()) }

func secretState(v, param string) string {
	switch {
	case v != "":
		return "set"
	case param != "":
		return "ssm:" + param
	}
	return "unset"
}

// trimmed returns getenv with surrounding space removed: an empty or blank variable counts
// as unset.
func trimmed(getenv func(string) string) func(string) string {
	return func(name string) string { return strings.TrimSpace(getenv(name)) }
}
