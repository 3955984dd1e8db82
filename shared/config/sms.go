package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The SMS provider's variables, read by the functions that talk to the provider (dispatch,
// reconcile) and by the sweeper, which times reconciliation with SMS_TIMEOUT and
// SMS_VISIBILITY_SECONDS. Package sms/provider builds the adapter SMS names.
const (
	// EnvSMSProviders is the ordered provider chain, e.g. "endusersms,sinch"; the first is
	// tried first. EnvSMSProvider, the single provider of earlier versions, is read as a
	// chain of one when EnvSMSProviders is not set.
	EnvSMSProviders         = "SMS_PROVIDERS"
	EnvSMSProvider          = "SMS_PROVIDER"
	EnvSMSTimeout           = "SMS_TIMEOUT"
	EnvSMSVisibilitySeconds = "SMS_VISIBILITY_SECONDS"

	EnvSMSSimulatorURL   = "SMS_SIMULATOR_URL"
	EnvSMSSimulator2URL  = "SMS_SIMULATOR2_URL"
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
	// EnvSinchCallbackToken is the secret that authenticates Sinch's delivery report
	// callbacks (local runs; a secret): dispatch adds it to SINCH_CALLBACK_URL's query as
	// SinchCallbackTokenQuery, and the Sinch webhook compares it. EnvSinchCallbackTokenParam
	// names the SSM SecureString that holds it in AWS, read once at cold start.
	EnvSinchCallbackToken      = "SINCH_CALLBACK_TOKEN"
	EnvSinchCallbackTokenParam = "SINCH_CALLBACK_TOKEN_PARAM"
	// EnvSinchCallbackTokenPrevious is, during a rotation of the callback token, the token
	// being retired (local runs; a secret): the Sinch webhook still accepts the reports of
	// batches sent with it, and dispatch never gives it out. EnvSinchCallbackTokenPreviousParam
	// names its SSM SecureString in AWS. Unset outside a rotation (docs/providers.md).
	EnvSinchCallbackTokenPrevious      = "SINCH_CALLBACK_TOKEN_PREVIOUS"
	EnvSinchCallbackTokenPreviousParam = "SINCH_CALLBACK_TOKEN_PREVIOUS_PARAM"

	// Twilio Programmable Messaging. EnvTwilioAPIKey is the API key sends and look-ups
	// authenticate with (HTTP basic), written "<key SID>:<key secret>" (local runs; a secret);
	// EnvTwilioAPIKeyParam names the SSM SecureString that holds it in AWS, read once at cold
	// start: one value, so that a key rotation swaps SID and secret together. EnvTwilioAuthToken
	// is the account's auth token (local runs; a secret), used only as the key of the
	// X-Twilio-Signature on status callbacks: it can do anything the account can, so nothing
	// that sends holds it. EnvTwilioAuthTokenParam names its SSM SecureString. The secondary
	// token (EnvTwilioSecondaryAuthToken / ...Param) is accepted too, during a rotation.
	// EnvTwilioCallbackURL is the stack's status callback route, without a query:
	// dispatch adds the attempt reference (TwilioCallbackAttemptQuery), and the callback
	// function checks signatures against it.
	EnvTwilioBaseURL                 = "TWILIO_BASE_URL"
	EnvTwilioAccountSID              = "TWILIO_ACCOUNT_SID"
	EnvTwilioAPIKey                  = "TWILIO_API_KEY"
	EnvTwilioAPIKeyParam             = "TWILIO_API_KEY_PARAM"
	EnvTwilioAuthToken               = "TWILIO_AUTH_TOKEN"
	EnvTwilioAuthTokenParam          = "TWILIO_AUTH_TOKEN_PARAM"
	EnvTwilioSecondaryAuthToken      = "TWILIO_SECONDARY_AUTH_TOKEN"
	EnvTwilioSecondaryAuthTokenParam = "TWILIO_SECONDARY_AUTH_TOKEN_PARAM"
	EnvTwilioFrom                    = "TWILIO_FROM"
	EnvTwilioMessagingServiceSID     = "TWILIO_MESSAGING_SERVICE_SID"
	EnvTwilioCallbackURL             = "TWILIO_CALLBACK_URL"
)

// TwilioCallbackAttemptQuery is the query parameter of each Twilio message's StatusCallback
// URL that carries the attempt reference: Twilio's Messages resource has no client reference,
// so the callback URL, which is ours to choose per message, names the attempt.
const TwilioCallbackAttemptQuery = "attempt"

// DefaultTwilioBaseURL is Twilio's REST API root.
const DefaultTwilioBaseURL = "https://api.twilio.com"

// MinTwilioAuthTokenLen is the shortest Twilio auth token accepted (Twilio's are 32
// hexadecimal characters).
const MinTwilioAuthTokenLen = 16

// MinTwilioAPIKeySecretLen is the shortest Twilio API key secret accepted (Twilio's are 32
// characters).
const MinTwilioAPIKeySecretLen = 16

// ParseTwilioAPIKey splits a Twilio API key written "<key SID>:<key secret>": the SID starts
// with SK and the secret has at least MinTwilioAPIKeySecretLen bytes. Its errors never quote
// the value.
func ParseTwilioAPIKey(v string) (sid, secret string, err error) {
	sid, secret, ok := strings.Cut(strings.TrimSpace(v), ":")
	if !ok || len(sid) < 3 || !strings.HasPrefix(sid, "SK") || strings.ContainsAny(sid, " \t") {
		return "", "", fmt.Errorf("the Twilio API key must be written <key SID>:<key secret>, its SID starting with SK")
	}
	if len(secret) < MinTwilioAPIKeySecretLen {
		return "", "", fmt.Errorf("the Twilio API key secret must be at least %d bytes", MinTwilioAPIKeySecretLen)
	}
	return sid, secret, nil
}

// SinchCallbackTokenQuery is the query parameter of the callback URL that carries the Sinch
// callback token. Sinch signs no SMS delivery report (its basic authentication and OAuth for
// callbacks are set up by its account managers, per account), so the secret travels in the
// URL Sinch is given with each batch.
const SinchCallbackTokenQuery = "token"

// The provider kinds SMS_PROVIDER names. Package sms/provider checks that they are its
// adapters' names.
const (
	SMSSimulator  = "simulator"
	SMSEndUserSMS = "endusersms"
	SMSSinch      = "sinch"
	SMSTwilio     = "twilio"
	// SMSSimulator2 is a second simulated provider (the simulator started in its
	// second-provider mode, at SMS_SIMULATOR2_URL), for failover tests.
	SMSSimulator2 = "simulator2"
)

// MaxSMSProviders bounds the provider chain.
const MaxSMSProviders = 4

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
	case SMSTwilio:
		// No Twilio answer ever counts as "not found" (a lookup is by Message SID only), so the
		// window only spaces reconciliation, and keeps a record past its deadline open that
		// long for a late status callback.
		return time.Minute
	}
	return 0
}

// SMS is the SMS providers' configuration. SinchAPIToken and SimulatorToken are secrets:
// SMS implements fmt.Stringer, fmt.GoStringer and slog.LogValuer without them.
type SMS struct {
	// Chain is the ordered provider chain (SMS_PROVIDERS, or SMS_PROVIDER as a chain of one).
	Chain []string
	// Kind is the first provider of the chain.
	Kind string
	// Timeout bounds one call to any provider of the chain.
	Timeout time.Duration
	// Visibility is the longest visibility window of the chain's providers, unless set.
	Visibility time.Duration

	SimulatorURL   string
	Simulator2URL  string
	SimulatorToken string

	OriginationIdentity  string
	ConfigurationSetName string
	// ProtectConfigurationID is SMS_PROTECT_CONFIGURATION_ID, the protect configuration every
	// End User Messaging send names (its country rules); empty names none. ProtectOff is set
	// when the variable says Off: no protect configuration, on purpose (see CheckProtect).
	ProtectConfigurationID string
	ProtectOff             bool
	Endpoint               string

	SinchBaseURL       string
	SinchServicePlanID string
	SinchAPIToken      string
	// SinchAPITokenParam names the SSM SecureString that holds SinchAPIToken in AWS.
	SinchAPITokenParam string
	SinchFrom          string
	// SinchCallbackURL is where Sinch posts delivery reports (the Sinch webhook route), without
	// the token; empty asks for no delivery reports.
	SinchCallbackURL string
	// SinchCallbackToken authenticates those reports (a secret); SinchCallbackTokenParam names
	// the SSM SecureString that holds it in AWS.
	SinchCallbackToken      string
	SinchCallbackTokenParam string

	TwilioBaseURL    string
	TwilioAccountSID string
	// TwilioAPIKey ("<key SID>:<key secret>") is a secret; TwilioAPIKeyParam names its SSM
	// SecureString. The auth token is not here: nothing that sends reads it (see Receipts).
	TwilioAPIKey      string
	TwilioAPIKeyParam string
	// TwilioFrom or TwilioMessagingServiceSID (one of them) is the sender.
	TwilioFrom                string
	TwilioMessagingServiceSID string
	// TwilioCallbackURL is the status callback route, without a query.
	TwilioCallbackURL string
}

// LoadSMS reads the SMS provider's variables through getenv and checks what the chosen kind
// needs.
func LoadSMS(getenv func(string) string) (SMS, error) {
	get := trimmed(getenv)
	chain, chainErr := parseChain(get)
	cfg := SMS{
		Chain:                   chain,
		Timeout:                 DefaultSMSTimeout,
		SimulatorURL:            get(EnvSMSSimulatorURL),
		Simulator2URL:           get(EnvSMSSimulator2URL),
		SimulatorToken:          get(EnvSMSSimulatorToken),
		OriginationIdentity:     get(EnvSMSOriginationIdentity),
		ConfigurationSetName:    get(EnvSMSConfigurationSet),
		ProtectConfigurationID:  get(EnvSMSProtectConfiguration),
		Endpoint:                get(EnvSMSEndpoint),
		SinchBaseURL:            get(EnvSinchBaseURL),
		SinchServicePlanID:      get(EnvSinchServicePlanID),
		SinchAPIToken:           get(EnvSinchAPIToken),
		SinchAPITokenParam:      get(EnvSinchAPITokenParam),
		SinchFrom:               get(EnvSinchFrom),
		SinchCallbackURL:        get(EnvSinchCallbackURL),
		SinchCallbackToken:      get(EnvSinchCallbackToken),
		SinchCallbackTokenParam: get(EnvSinchCallbackTokenParam),

		TwilioBaseURL:             get(EnvTwilioBaseURL),
		TwilioAccountSID:          get(EnvTwilioAccountSID),
		TwilioAPIKey:              get(EnvTwilioAPIKey),
		TwilioAPIKeyParam:         get(EnvTwilioAPIKeyParam),
		TwilioFrom:                get(EnvTwilioFrom),
		TwilioMessagingServiceSID: get(EnvTwilioMessagingServiceSID),
		TwilioCallbackURL:         get(EnvTwilioCallbackURL),
	}
	if len(chain) > 0 {
		cfg.Kind = chain[0]
	}
	if strings.EqualFold(cfg.ProtectConfigurationID, Off) {
		cfg.ProtectConfigurationID, cfg.ProtectOff = "", true
	}
	errs := append(cfg.loadTimings(get), chainErr)
	if cfg.SinchBaseURL == "" {
		cfg.SinchBaseURL = DefaultSinchBaseURL
	}
	if cfg.TwilioBaseURL == "" && slices.Contains(chain, SMSTwilio) {
		cfg.TwilioBaseURL = DefaultTwilioBaseURL
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
	cfg.Visibility = 0
	for _, kind := range cfg.Chain {
		cfg.Visibility = max(cfg.Visibility, DefaultSMSVisibility(kind))
	}
	if v := get(EnvSMSVisibilitySeconds); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s must be a whole number of seconds, 0 or more", EnvSMSVisibilitySeconds))
		}
		cfg.Visibility = time.Duration(n) * time.Second
	}
	return errs
}

// parseChain reads SMS_PROVIDERS, or SMS_PROVIDER when it is not set, as an ordered list of
// provider kinds, lower-cased. Both set and different is an error, so that a stack being
// migrated does not silently use the one it did not mean; so is a provider named twice.
func parseChain(get func(string) string) ([]string, error) {
	list, single := get(EnvSMSProviders), get(EnvSMSProvider)
	if list == "" {
		list = single
	} else if single != "" && !strings.EqualFold(single, list) {
		return nil, fmt.Errorf("%s and %s are both set and differ; set %s only", EnvSMSProviders, EnvSMSProvider, EnvSMSProviders)
	}
	var chain []string
	for part := range strings.SplitSeq(list, ",") {
		kind := strings.ToLower(strings.TrimSpace(part))
		if kind == "" {
			continue
		}
		if slices.Contains(chain, kind) {
			return nil, fmt.Errorf("%s names %s twice", EnvSMSProviders, kind)
		}
		chain = append(chain, kind)
	}
	if len(chain) > MaxSMSProviders {
		return nil, fmt.Errorf("%s names %d providers, at most %d", EnvSMSProviders, len(chain), MaxSMSProviders)
	}
	return chain, nil
}

// Validate reports what cfg lacks for the providers of its chain. Its errors name variables,
// never values.
func (cfg SMS) Validate() error {
	chain := cfg.Chain
	if len(chain) == 0 && cfg.Kind != "" {
		chain = []string{cfg.Kind}
	}
	if len(chain) == 0 {
		return fmt.Errorf("%s is not set", EnvSMSProviders)
	}
	var errs []error
	for _, kind := range chain {
		errs = append(errs, cfg.validateKind(kind))
	}
	return errors.Join(errs...)
}

// CheckProtect refuses a chain with End User Messaging and no protect configuration, unless
// SMS_PROTECT_CONFIGURATION_ID says Off: its country rules are the guard behind intake's
// allow-list, and a send without one goes to any country the account may reach. The function
// that sends (dispatch) calls it; the others never send.
func (cfg SMS) CheckProtect() error {
	if !slices.Contains(cfg.Chain, SMSEndUserSMS) || cfg.ProtectConfigurationID != "" || cfg.ProtectOff {
		return nil
	}
	return fmt.Errorf("config.sms: %s is required with %s in %s: it names the protect configuration whose country rules "+
		"every send is held to (template: SmsProtectConfiguration); set it to %q, explicitly, to send without one (docs/abuse-guards.md)",
		EnvSMSProtectConfiguration, SMSEndUserSMS, EnvSMSProviders, Off)
}

// validateKind reports what cfg lacks for the provider kind.
func (cfg SMS) validateKind(kind string) error {
	var errs []error
	need := func(v, name string) {
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required for %s=%s", name, EnvSMSProviders, kind))
		}
	}
	switch kind {
	case SMSSimulator:
		need(cfg.SimulatorURL, EnvSMSSimulatorURL)
	case SMSSimulator2:
		need(cfg.Simulator2URL, EnvSMSSimulator2URL)
	case SMSEndUserSMS:
		need(cfg.OriginationIdentity, EnvSMSOriginationIdentity)
	case SMSSinch:
		need(cfg.SinchServicePlanID, EnvSinchServicePlanID)
		if cfg.SinchAPIToken == "" && cfg.SinchAPITokenParam == "" {
			errs = append(errs, fmt.Errorf("%s or %s is required for %s=%s", EnvSinchAPIToken, EnvSinchAPITokenParam, EnvSMSProviders, kind))
		}
		need(cfg.SinchFrom, EnvSinchFrom)
		errs = append(errs, cfg.validateSinchCallback())
	case SMSTwilio:
		errs = append(errs, cfg.validateTwilio())
	default:
		// The kind is not a secret: naming it helps the operator find the typo.
		errs = append(errs, fmt.Errorf("%s %q is not one of %s, %s, %s, %s, %s", EnvSMSProviders, kind, SMSSimulator, SMSSimulator2, SMSEndUserSMS, SMSSinch, SMSTwilio))
	}
	return errors.Join(errs...)
}

// validateSinchCallback checks SINCH_CALLBACK_URL when set: an http(s) URL without a query
// (dispatch adds the token to it), and a token to authenticate the reports, which the Sinch
// webhook refuses without one.
func (cfg SMS) validateSinchCallback() error {
	if cfg.SinchCallbackURL == "" {
		return nil
	}
	var errs []error
	u, err := url.Parse(cfg.SinchCallbackURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("%s must be an http(s) URL without user, query or fragment", EnvSinchCallbackURL))
	}
	if cfg.SinchCallbackToken == "" && cfg.SinchCallbackTokenParam == "" {
		errs = append(errs, fmt.Errorf("%s or %s is required with %s", EnvSinchCallbackToken, EnvSinchCallbackTokenParam, EnvSinchCallbackURL))
	}
	if cfg.SinchCallbackToken != "" && len(cfg.SinchCallbackToken) < MinWebhookTokenLen {
		errs = append(errs, fmt.Errorf("%s must be at least %d bytes", EnvSinchCallbackToken, MinWebhookTokenLen))
	}
	return errors.Join(errs...)
}

// validateTwilio checks what Twilio needs: the account SID, the API key (or its parameter), exactly one sender (TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID), and the status
// callback URL. The callback is required: an attempt whose answer was lost carries no Message
// SID, and only its callback can settle it.
func (cfg SMS) validateTwilio() error {
	var errs []error
	kind := SMSTwilio
	if cfg.TwilioAccountSID == "" {
		errs = append(errs, fmt.Errorf("%s is required for %s=%s", EnvTwilioAccountSID, EnvSMSProviders, kind))
	}
	if cfg.TwilioAPIKey == "" && cfg.TwilioAPIKeyParam == "" {
		errs = append(errs, fmt.Errorf("%s or %s is required for %s=%s", EnvTwilioAPIKey, EnvTwilioAPIKeyParam, EnvSMSProviders, kind))
	}
	if cfg.TwilioAPIKey != "" {
		if _, _, err := ParseTwilioAPIKey(cfg.TwilioAPIKey); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvTwilioAPIKey, err))
		}
	}
	if (cfg.TwilioFrom == "") == (cfg.TwilioMessagingServiceSID == "") {
		errs = append(errs, fmt.Errorf("exactly one of %s and %s is required for %s=%s", EnvTwilioFrom, EnvTwilioMessagingServiceSID, EnvSMSProviders, kind))
	}
	u, err := url.Parse(cfg.TwilioCallbackURL)
	if cfg.TwilioCallbackURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		errs = append(errs, fmt.Errorf("%s must be an http(s) URL without user, query or fragment for %s=%s", EnvTwilioCallbackURL, EnvSMSProviders, kind))
	}
	return errors.Join(errs...)
}

// MinValidity returns the shortest validity period every provider of cfg's chain accepts: a
// send with less is refused before it leaves the process. Providers that count validity in
// whole seconds accept no less than a second.
func (cfg SMS) MinValidity() time.Duration {
	least := time.Second
	if cfg.Kind == SMSEndUserSMS || slices.Contains(cfg.Chain, SMSEndUserSMS) {
		least = EndUserSMSMinValidity
	}
	return least
}

// One returns cfg narrowed to one provider of its chain, kind, as the adapters are built.
func (cfg SMS) One(kind string) SMS {
	cfg.Kind, cfg.Chain = kind, []string{kind}
	return cfg
}

// String describes cfg with its secrets (the Sinch API and callback tokens, the Twilio API
// key, the simulator token) replaced, so that logging or printing it never shows them.
func (cfg SMS) String() string {
	return fmt.Sprintf("providers=%s timeout=%s visibility=%s simulator_url=%s simulator2_url=%s simulator_token=%s origination_identity=%s configuration_set=%s protect_configuration=%s sinch_base_url=%s sinch_service_plan_id=%s sinch_api_token=%s sinch_from=%s sinch_callback_url=%s sinch_callback_token=%s twilio_base_url=%s twilio_account_sid=%s twilio_api_key=%s twilio_from=%s twilio_messaging_service_sid=%s twilio_callback_url=%s",
		strings.Join(cfg.Chain, ","), cfg.Timeout, cfg.Visibility, cfg.SimulatorURL, cfg.Simulator2URL, secretState(cfg.SimulatorToken, ""), cfg.OriginationIdentity,
		cfg.ConfigurationSetName, cfg.ProtectConfigurationID, cfg.SinchBaseURL, cfg.SinchServicePlanID, secretState(cfg.SinchAPIToken, cfg.SinchAPITokenParam), cfg.SinchFrom,
		cfg.SinchCallbackURL, secretState(cfg.SinchCallbackToken, cfg.SinchCallbackTokenParam),
		cfg.TwilioBaseURL, cfg.TwilioAccountSID, secretState(cfg.TwilioAPIKey, cfg.TwilioAPIKeyParam), cfg.TwilioFrom, cfg.TwilioMessagingServiceSID, cfg.TwilioCallbackURL)
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
