// Package provider chooses and builds the SMS provider adapter from configuration, so that
// every function wires the same provider the same way.
//
// Its configuration is config.SMS: package config names and parses the variables
// (SMS_PROVIDER, SMS_TIMEOUT, SMS_VISIBILITY_SECONDS and each provider's own; configdoc.Vars
// and the table of docs/configuration.md describe them). For endusersms, credentials and region
// come from the AWS SDK's usual sources, the endpoint override from
// AWS_ENDPOINT_URL_PINPOINT_SMS_VOICE_V2 or SMS_ENDPOINT.
//
// The Provider that New returns holds the Sender for the dispatch function and, separately,
// a sms.LookupOnly for the reconcile function: that value has no Send method, whatever
// adapter it wraps.
package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/secretparam"
	"github.com/resetnotify/resetnotify/shared/adapters/sms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/endusersms"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/simclient"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/sinch"
	"github.com/resetnotify/resetnotify/shared/adapters/sms/twilio"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// The provider kinds SMS_PROVIDER names. Each is also the name recorded on the records.
// Package config names them too (config.SMSSimulator, ...); a test keeps the two in step.
const (
	Simulator  = simclient.Provider
	EndUserSMS = endusersms.Provider
	Sinch      = sinch.Provider
	Twilio     = twilio.Provider
	// Simulator2 is the simulator in its second-provider mode, at SMS_SIMULATOR2_URL.
	Simulator2 = config.SMSSimulator2
)

// DefaultTimeout bounds one provider call when SMS_TIMEOUT is not set.
const DefaultTimeout = config.DefaultSMSTimeout

// DefaultSinchBaseURL is Sinch's US region.
const DefaultSinchBaseURL = config.DefaultSinchBaseURL

// DefaultVisibility returns the visibility window of kind when none is configured.
func DefaultVisibility(kind string) time.Duration { return config.DefaultSMSVisibility(kind) }

// MinValidity returns the shortest validity period the provider of kind accepts: a send with
// less is refused before it leaves the process. Providers that count validity in whole
// seconds accept no less than a second.
func MinValidity(kind string) time.Duration {
	if kind == EndUserSMS {
		return endusersms.MinValidity
	}
	return time.Second
}

// Config is the provider configuration. Package config owns its variables and parses them
// (config.LoadSMS), so that a function that only times the provider (the sweeper) reads them
// without linking the adapters.
type Config = config.SMS

// MinSinchAPITokenLen is the shortest Sinch API token ResolveSecrets accepts from SSM.
const MinSinchAPITokenLen = 16

// ResolveSecrets returns cfg with the secrets that configuration names but does not hold
// read from SSM Parameter Store: the Sinch API token from SINCH_API_TOKEN_PARAM, and, when
// delivery reports are asked for (SINCH_CALLBACK_URL), the callback token from
// SINCH_CALLBACK_TOKEN_PARAM; and the Twilio API key from TWILIO_API_KEY_PARAM. Only the
// functions that call the provider (dispatch, reconcile)
// call it, once at cold start.
func ResolveSecrets(ctx context.Context, cfg Config, params secretparam.API) (Config, error) {
	if cfg.Kind == Twilio || slices.Contains(cfg.Chain, Twilio) {
		v, err := secretparam.Resolve(ctx, params, []byte(cfg.TwilioAPIKey), cfg.TwilioAPIKeyParam, config.MinTwilioAPIKeySecretLen)
		if err != nil && !errors.Is(err, secretparam.ErrUnset) {
			return Config{}, fmt.Errorf("provider.resolve secrets: %w", err)
		}
		cfg.TwilioAPIKey = string(v)
	}
	if cfg.Kind != Sinch && !slices.Contains(cfg.Chain, Sinch) {
		return cfg, nil
	}
	v, err := secretparam.Resolve(ctx, params, []byte(cfg.SinchAPIToken), cfg.SinchAPITokenParam, MinSinchAPITokenLen)
	if err != nil && !errors.Is(err, secretparam.ErrUnset) {
		return Config{}, fmt.Errorf("provider.resolve secrets: %w", err)
	}
	cfg.SinchAPIToken = string(v)
	if cfg.SinchCallbackURL == "" {
		return cfg, nil
	}
	v, err = secretparam.Resolve(ctx, params, []byte(cfg.SinchCallbackToken), cfg.SinchCallbackTokenParam, config.MinWebhookTokenLen)
	if err != nil && !errors.Is(err, secretparam.ErrUnset) {
		return Config{}, fmt.Errorf("provider.resolve secrets: %w", err)
	}
	cfg.SinchCallbackToken = string(v)
	return cfg, nil
}

// Deps are what the adapters need beyond configuration.
type Deps struct {
	// AWS is the SDK configuration for endusersms. When it has no credentials provider,
	// FromEnv loads the default configuration.
	AWS aws.Config
	// Receipts reads recorded delivery events; endusersms reconciles through it. Without it
	// every endusersms lookup is inconclusive.
	Receipts sms.ReceiptReader
	// HTTPClient is used by the HTTP adapters (default: their own).
	HTTPClient *http.Client
	// Clock tells the time (default: the system clock).
	Clock notify.Clock
}

// Provider is a configured provider.
type Provider struct {
	// Name is recorded on the record as its provider.
	Name string
	// Sender sends; give it to the dispatch function only.
	Sender sms.Sender
	// Lookup looks attempts up and cannot send; give it to the reconcile function.
	Lookup sms.LookupOnly
	// Visibility is the window after an attempt before "not found" counts: delay the
	// reconcile queue message at least this long.
	Visibility time.Duration
	// Timeout bounds one provider call: the dispatch lease must outlast it.
	Timeout time.Duration
}

// New builds the provider cfg names.
func New(cfg Config, deps Deps) (Provider, error) {
	if err := cfg.Validate(); err != nil {
		return Provider{}, fmt.Errorf("provider.new: %w", err)
	}
	p := Provider{Name: cfg.Kind, Visibility: cfg.Visibility, Timeout: cfg.Timeout}
	switch cfg.Kind {
	case Simulator, Simulator2:
		base := cfg.SimulatorURL
		if cfg.Kind == Simulator2 {
			base = cfg.Simulator2URL
		}
		c, err := simclient.New(simclient.Config{
			BaseURL: base, Token: cfg.SimulatorToken, Timeout: cfg.Timeout, Name: cfg.Kind,
			Visibility: cfg.Visibility, HTTPClient: deps.HTTPClient, Clock: deps.Clock,
		})
		if err != nil {
			return Provider{}, fmt.Errorf("provider.new: %w", err)
		}
		p.Sender, p.Lookup = c, sms.OnlyLookup(c)
	case EndUserSMS:
		s, err := endusersms.NewSender(endusersms.NewClient(deps.AWS, cfg.Endpoint), endusersms.Config{
			OriginationIdentity: cfg.OriginationIdentity, ConfigurationSetName: cfg.ConfigurationSetName,
			ProtectConfigurationID: cfg.ProtectConfigurationID, Timeout: cfg.Timeout, Clock: deps.Clock,
		})
		if err != nil {
			return Provider{}, fmt.Errorf("provider.new: %w", err)
		}
		p.Sender = s
		p.Lookup = sms.OnlyLookup(endusersms.NewLookup(deps.Receipts, cfg.Visibility, deps.Clock))
	case Sinch:
		if cfg.SinchAPIToken == "" {
			return Provider{}, errors.New("provider.new: the Sinch API token is not resolved (SINCH_API_TOKEN_PARAM: call ResolveSecrets)")
		}
		if cfg.SinchCallbackURL != "" && cfg.SinchCallbackToken == "" {
			return Provider{}, errors.New("provider.new: the Sinch callback token is not resolved (SINCH_CALLBACK_TOKEN_PARAM: call ResolveSecrets)")
		}
		c, err := sinch.New(sinch.Config{
			BaseURL: cfg.SinchBaseURL, ServicePlanID: cfg.SinchServicePlanID, APIToken: cfg.SinchAPIToken,
			From: cfg.SinchFrom, CallbackURL: cfg.SinchCallbackURL, CallbackToken: cfg.SinchCallbackToken, Timeout: cfg.Timeout,
			Visibility: cfg.Visibility, HTTPClient: deps.HTTPClient, Clock: deps.Clock,
		})
		if err != nil {
			return Provider{}, fmt.Errorf("provider.new: %w", err)
		}
		p.Sender, p.Lookup = c, sms.OnlyLookup(c)
	case Twilio:
		c, err := newTwilio(cfg, deps)
		if err != nil {
			return Provider{}, err
		}
		p.Sender, p.Lookup = c, sms.OnlyLookup(c)
	}
	return p, nil
}

// newTwilio builds the Twilio client of cfg, whose API key ResolveSecrets has read.
func newTwilio(cfg Config, deps Deps) (*twilio.Client, error) {
	if cfg.TwilioAPIKey == "" {
		return nil, errors.New("provider.new: the Twilio API key is not resolved (TWILIO_API_KEY_PARAM: call ResolveSecrets)")
	}
	keySID, keySecret, err := config.ParseTwilioAPIKey(cfg.TwilioAPIKey)
	if err != nil {
		return nil, fmt.Errorf("provider.new: %w", err)
	}
	c, err := twilio.New(twilio.Config{
		BaseURL: cfg.TwilioBaseURL, AccountSID: cfg.TwilioAccountSID, APIKeySID: keySID, APIKeySecret: keySecret,
		From: cfg.TwilioFrom, MessagingServiceSID: cfg.TwilioMessagingServiceSID, CallbackURL: cfg.TwilioCallbackURL,
		Timeout: cfg.Timeout, Visibility: cfg.Visibility, HTTPClient: deps.HTTPClient, Clock: deps.Clock,
	})
	if err != nil {
		return nil, fmt.Errorf("provider.new: %w", err)
	}
	return c, nil
}

// NewChain builds every provider of cfg's chain, in its order. Each shares cfg's timeout and
// visibility window (the longest of the chain's unless configured).
func NewChain(cfg Config, deps Deps) ([]Provider, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("provider.new_chain: %w", err)
	}
	chain := cfg.Chain
	if len(chain) == 0 {
		chain = []string{cfg.Kind}
	}
	out := make([]Provider, 0, len(chain))
	for _, kind := range chain {
		p, err := New(cfg.One(kind), deps)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// BuildChain resolves cfg's secrets from SSM (ResolveSecrets) and builds every provider of
// its chain: what dispatch and reconcile do once at cold start.
func BuildChain(ctx context.Context, cfg Config, params secretparam.API, deps Deps) ([]Provider, error) {
	cfg, err := ResolveSecrets(ctx, cfg, params)
	if err != nil {
		return nil, err
	}
	return NewChain(cfg, deps)
}

// Build resolves cfg's secrets from SSM (ResolveSecrets) and builds the provider: what the
// functions that call the provider (dispatch, reconcile) do once at cold start.
func Build(ctx context.Context, cfg Config, params secretparam.API, deps Deps) (Provider, error) {
	cfg, err := ResolveSecrets(ctx, cfg, params)
	if err != nil {
		return Provider{}, err
	}
	return New(cfg, deps)
}

// FromEnv reads the configuration through getenv and builds the provider. For endusersms
// without AWS credentials in deps, it takes the AWS configuration from the Lambda environment
// (awsclient.FromLambdaEnv).
func FromEnv(ctx context.Context, getenv func(string) string, deps Deps) (Provider, error) {
	cfg, err := config.LoadSMS(getenv)
	if err != nil {
		return Provider{}, err
	}
	if (cfg.Kind == EndUserSMS || slices.Contains(cfg.Chain, EndUserSMS)) && deps.AWS.Credentials == nil {
		deps.AWS, err = awsclient.FromLambdaEnv(getenv)
		if err != nil {
			return Provider{}, fmt.Errorf("provider.from_env: loading AWS configuration: %w", err)
		}
	}
	return New(cfg, deps)
}
