// Package configdoc describes every environment variable package config names: the functions
// that read it, its default and its meaning, which docs/configuration.md's table lists (the
// root tests check one against the other). No Lambda links it.
package configdoc

import (
	"slices"

	"github.com/resetnotify/resetnotify/shared/config"
)

// Var describes one environment variable: what the table of docs/configuration.md lists.
type Var struct {
	Name string
	// Functions are the functions (folders under functions/) that use it, or the tool that
	// reads it.
	Functions []string
	// Default is what applies when it is unset, "" when it is required or off.
	Default string
	// Meaning is one line.
	Meaning string
}

// The groups of functions that read the same variables.
var (
	allFunctions  = []string{"intake", "dispatch", "reconcile", "sweeper", "audit", "audit-replay", "digest", "provider-events"}
	workers       = []string{"dispatch", "reconcile", "sweeper"}
	policyReaders = []string{"intake", "dispatch", "reconcile", "sweeper"}
	providerUsers = []string{"dispatch", "reconcile"}
	auditWriters  = []string{"audit", "audit-replay", "digest"}
	intakeOnly    = []string{"intake"}
	// guardUsers count admissions: intake, and dispatch for a record whose creator did not.
	guardUsers   = []string{"intake", "dispatch"}
	digestOnly   = []string{"digest"}
	receiptsOnly = []string{"provider-events"}
	// conversionUsers count sends and conversions; intake also reports conversions to the
	// provider (feedback), so it reads the provider's name and address too.
	conversionUsers       = []string{"intake", "dispatch"}
	feedbackUsers         = []string{"intake", "dispatch", "reconcile", "sweeper"}
	feedbackProviderUsers = []string{"intake", "dispatch", "reconcile"}
)

// Vars lists every environment variable the functions read, in docs/configuration.md's order. The caller
// may change what it gets: it is a copy.
func Vars() []Var { return slices.Clone(vars) }

// vars is the list Vars returns: a table, so it grows by a line per variable.
var vars = []Var{
	{config.EnvNotificationsTable, []string{"intake", "dispatch", "reconcile", "sweeper", "audit-replay", "provider-events"}, "", "the notifications table"},
	{config.EnvAuditTable, auditWriters, "", "the audit table"},
	{config.EnvDispatchQueueURL, policyReaders, "", "the dispatch queue"},
	{config.EnvReconcileQueueURL, workers, "", "the reconcile queue"},
	{config.EnvPolicyVersion, policyReaders, "default-1", "names the policy stamped on every record and audit entry"},
	{config.EnvSafetyMarginSeconds, policyReaders, "60", "`dispatch_deadline = expires_at − margin`; 0 is refused"},
	{config.EnvStatusGraceHours, policyReaders, "24", "record TTL = `expires_at` + grace; 0 is refused, and the workers refuse a grace shorter than the lease and reconciliation horizon"},
	{config.EnvMaxAheadHours, policyReaders, "24", "how far ahead `expires_at` may be"},
	{config.EnvMaxAttempts, policyReaders, "5", "provider calls per notification"},
	{config.EnvSealKMSKeyID, []string{"intake", "dispatch"}, "", "the KMS key sealing `{to, params, locale}` (AWS)"},
	{config.EnvSealKeysTable, []string{"intake", "dispatch"}, "", "the seal-keys table: each KMS data key's encrypted form, once, named by the envelopes' 16-byte ID (AWS; required with `SEAL_KMS_KEY_ID`)"},
	{config.EnvSealLocalKey, []string{"intake", "dispatch"}, "", "the sealing key instead of KMS (local, base64 of 32 bytes; a secret)"},
	{config.EnvDestinationPepperParam, intakeOnly, "", "the SSM SecureString holding the destination fingerprint's HMAC pepper (AWS)"},
	{config.EnvDestinationPepper, intakeOnly, "", "the pepper itself (local, at least 16 bytes; a secret)"},
	{config.EnvFingerprintKeyParam, intakeOnly, "", "the SSM SecureString holding the request fingerprint's HMAC key (AWS)"},
	{config.EnvFingerprintKey, intakeOnly, "", "the key itself (local, at least 32 bytes, not the pepper nor the sealing key; a secret)"},
	{config.EnvOperatorPrincipalARN, intakeOnly, "", "the one principal (role, user or root ARN) that may read every notification's status; unset: each caller reads only its own"},
	{config.EnvLogLevel, allFunctions, "info", "debug, info, warn, error"},
	{config.EnvMetricsNamespace, allFunctions, "resetnotify", "CloudWatch namespace of every metric; the template sets `resetnotify/<stack name>`"},
	{config.EnvLeaseSeconds, workers, "30", "how long a dispatch worker holds a record while calling the provider; at least `SMS_TIMEOUT` + 5 s"},
	{config.EnvMinValiditySeconds, workers, "1", "the least time before the dispatch deadline worth sending with (never below the provider's minimum)"},
	{config.EnvMaxReconciles, workers, "10", "inconclusive lookups allowed per attempt"},
	{config.EnvBackoffBaseMS, workers, "1000", "base of the jittered exponential backoff of retries and lookups, in ms"},
	{config.EnvBackoffMaxSeconds, workers, "300", "cap of that backoff, in seconds"},
	{config.EnvSMSMaxSegments, []string{"intake", "dispatch"}, "2", "SMS segment budget of a rendered message"},
	{config.EnvGuardTable, guardUsers, "", "the abuse guard's counter table (dispatch counts a record whose creator never did); required: `off` turns the counters off, explicitly (template: `AbuseGuard`)"},
	{config.EnvGuardPerHour, guardUsers, "5", "admissions per destination per UTC clock hour (0: off)"},
	{config.EnvGuardPerDay, guardUsers, "10", "admissions per destination per UTC day (0: off)"},
	{config.EnvGuardPrefixDigits, guardUsers, "6", "digits of the number, calling code included, that form its prefix"},
	{config.EnvGuardPrefixPerMinute, guardUsers, "20", "distinct destinations a prefix may admit per UTC minute (0: off)"},
	{config.EnvGuardDecisionMS, intakeOnly, "500", "how long, in ms, a duplicate waits for the creator's decision (plus a 250 ms clock-skew margin) before it counts the record in the creator's place"},
	{config.EnvAllowedCountries, guardUsers, "", "ISO 3166-1 alpha-2 countries intake accepts, e.g. `US,CA,GB`; a number is in the country its digits belong to (+1 876 is JM); required: `off` allows every country, explicitly (template: `US,CA`)"},
	{config.EnvAllowedNumberTypes, guardUsers, "MOBILE,FIXED_LINE_OR_MOBILE", "number types intake accepts, as the phone-number metadata names them: `MOBILE`, `FIXED_LINE_OR_MOBILE`, `FIXED_LINE`, `VOIP`, `TOLL_FREE`, `PREMIUM_RATE`, `SHARED_COST`, `PERSONAL_NUMBER`, `PAGER`, `UAN`, `VOICEMAIL`; others, and numbers not valid in their country, get 422 `destination-not-allowed`"},
	{config.EnvSMSProviders, feedbackUsers, "", "the ordered provider chain, e.g. `endusersms,sinch`: `simulator`, `simulator2`, `endusersms`, `sinch`, `twilio`; the first is tried first (intake: whom to report conversions to)"},
	{config.EnvSMSProvider, feedbackUsers, "", "the single provider of earlier versions, read as a chain of one when `SMS_PROVIDERS` is unset"},
	{config.EnvSMSTimeout, workers, config.DefaultSMSTimeout.String(), "bound on one provider call, a Go duration such as `5s` or `800ms`"},
	{config.EnvSMSVisibilitySeconds, workers, "simulator 0, endusersms 300, sinch 60, twilio 60", "how long after an attempt a lookup waits before \"not found\" counts; the reconcile queue's delay must be at least this"},
	{config.EnvSMSSimulatorURL, feedbackProviderUsers, "", "base URL of the simulator (`simulator`)"},
	{config.EnvSMSSimulator2URL, feedbackProviderUsers, "", "base URL of the second simulated provider (`simulator2`)"},
	{config.EnvSMSSimulatorToken, providerUsers, "", "the simulator's bearer token, when it requires one (a secret)"},
	{config.EnvSMSOriginationIdentity, providerUsers, "", "phone number, sender ID or pool, ID or ARN (`endusersms`)"},
	{config.EnvSMSConfigurationSet, []string{"dispatch", "reconcile", "provider-events"}, "", "configuration set whose event destination feeds provider-events (`endusersms`); provider-events applies only its events"},
	{config.EnvSMSProtectConfiguration, []string{"dispatch"}, "", "protect configuration every send names, whose country rules End User Messaging enforces; required with `endusersms` in the chain: `off` sends under none, explicitly (template: `SmsProtect`)"},
	{config.EnvSMSEndpoint, feedbackProviderUsers, "", "End User Messaging SMS endpoint override (tests and emulators)"},
	{config.EnvSinchBaseURL, providerUsers, config.DefaultSinchBaseURL, "Sinch's regional API root (`sinch`)"},
	{config.EnvSinchServicePlanID, providerUsers, "", "Sinch service plan (`sinch`)"},
	{config.EnvSinchAPITokenParam, providerUsers, "", "the SSM SecureString holding the Sinch API token (AWS)"},
	{config.EnvSinchAPIToken, providerUsers, "", "the Sinch API token itself (local; a secret)"},
	{config.EnvSinchFrom, providerUsers, "", "Sinch sender number or ID (`sinch`)"},
	{config.EnvSinchCallbackURL, []string{"dispatch"}, "", "where Sinch posts delivery reports, the Sinch webhook route without its token (`sinch`; unset: no reports are asked for; template: the API's execute-api URL, or `CallbackBaseUrl`'s)"},
	{config.EnvSinchCallbackTokenParam, []string{"dispatch", "provider-events"}, "", "the SSM SecureString holding the Sinch callback token (AWS)"},
	{config.EnvSinchCallbackTokenPreviousParam, receiptsOnly, "", "during a rotation of the Sinch callback token, the SSM SecureString holding the token being retired (AWS); the Sinch webhook accepts it too"},
	{config.EnvSinchCallbackTokenPrevious, receiptsOnly, "", "that token itself (local; a secret)"},
	{config.EnvSinchCallbackToken, []string{"dispatch", "provider-events"}, "", "the token itself (local, at least 16 bytes; a secret): dispatch adds it to the callback URL's query (`token`), the Sinch webhook compares it; neither disables that webhook"},
	{config.EnvTwilioBaseURL, providerUsers, config.DefaultTwilioBaseURL, "Twilio's REST API root (`twilio`)"},
	{config.EnvTwilioAccountSID, providerUsers, "", "the Twilio account SID (`twilio`)"},
	{config.EnvTwilioAPIKeyParam, []string{"dispatch", "reconcile", "sweeper"}, "", "the SSM SecureString holding the Twilio API key, `<key SID>:<key secret>` (AWS): dispatch and reconcile authenticate with it; the sweeper only checks it is named"},
	{config.EnvTwilioAPIKey, []string{"dispatch", "reconcile"}, "", "the API key itself (local; a secret)"},
	{config.EnvTwilioAuthTokenParam, []string{"provider-events"}, "", "the SSM SecureString holding the Twilio auth token (AWS), with which the Twilio webhook checks signatures; nothing sends with it"},
	{config.EnvTwilioAuthToken, []string{"provider-events"}, "", "the Twilio auth token itself (local, at least 16 bytes; a secret)"},
	{config.EnvTwilioSecondaryAuthTokenParam, []string{"provider-events"}, "", "during an auth token rotation, the SSM SecureString holding the other token: callbacks signed with either are accepted"},
	{config.EnvTwilioSecondaryAuthToken, []string{"provider-events"}, "", "the secondary token itself (local; a secret)"},
	{config.EnvTwilioFrom, providerUsers, "", "Twilio sender number or ID (`twilio`; exactly one of it and the messaging service)"},
	{config.EnvTwilioMessagingServiceSID, providerUsers, "", "the Twilio Messaging Service to send through (`twilio`)"},
	{config.EnvTwilioCallbackURL, []string{"dispatch", "reconcile", "sweeper", "provider-events"}, "", "the Twilio status callback route (`twilio`, required): dispatch gives each message this URL with `?attempt=<attempt reference>`; the Twilio webhook checks signatures against it, so it must be the URL the route is reached at (template: the API's execute-api URL, or `CallbackBaseUrl`'s)"},
	{config.EnvReceiptsTable, []string{"provider-events", "reconcile"}, "", "the receipts table; reconcile runs without it"},
	{config.EnvReceiptRetentionDays, receiptsOnly, "7", "receipt TTL in days"},
	{config.EnvSimulatorWebhookTokenParam, receiptsOnly, "", "the SSM SecureString holding the simulator webhook's token (AWS)"},
	{config.EnvSimulatorWebhookToken, receiptsOnly, "", "the token itself (local, at least 16 bytes; a secret); neither disables the webhook"},
	{config.EnvAuditRetentionDays, auditWriters, "400", "audit entry TTL in days"},
	{config.EnvAuditHotDays, []string{"audit", "audit-replay", "digest", "auditctl"}, "0", "days an audit entry stays in the table once written (then TTL, its period archived; the template's AuditHotDays is 35); auditctl reads the archive for periods older than this (its default: 35); 0: no hot window"},
	{config.EnvAuditArchiveBucket, digestOnly, "", "the Object Lock bucket the digest function archives closed periods into; unset: no archive step"},
	{config.EnvAuditDigestPeriodMinutes, digestOnly, "60", "length of a signed digest period (divides a day); 1 locally"},
	{config.EnvAuditDigestGraceSeconds, digestOnly, "90", "how long after its end a period is closed; 10 locally"},
	{config.EnvAuditDigestLagBoundSeconds, []string{"digest", "auditctl"}, "900", "how far the digest step may fall behind before a digest not yet written is missing (verify: late until then) and the digest-lag alarm's threshold"},
	{config.EnvAuditDigestKMSKeyID, digestOnly, "", "the KMS key that signs digests (AWS)"},
	{config.EnvAuditDigestLocalKey, digestOnly, "", "the signing key's PEM instead of KMS (local; a secret)"},
	{config.EnvAuditDigestPublicKey, []string{"auditctl"}, "", "PEM file of the digests' public key; no function reads it, the local stack prints it"},
	{config.EnvLambdaFunctionName, []string{"audit", "audit-replay"}, "", "set by Lambda: the actor recorded on audit entries"},
	{config.EnvLambdaFunctionVersion, []string{"audit", "audit-replay"}, "", "set by Lambda: the actor's version"},
	{config.EnvConversionTable, conversionUsers, "", "the conversion counters and prefix decisions; required: `off` turns the conversion guard off, explicitly"},
	{config.EnvConversionWindowHours, conversionUsers, "24", "how far back a prefix's sends and conversions are summed"},
	{config.EnvConversionMinSends, conversionUsers, "20", "sends in the window before a prefix can be judged"},
	{config.EnvConversionBlockBelowPercent, conversionUsers, "20", "conversion share (percent) under which a prefix is blocked (0: off)"},
	{config.EnvConversionBlockHours, conversionUsers, "12", "how long an automatic prefix block lasts"},
	{config.EnvConversionRefreshSeconds, conversionUsers, "5", "how old intake's cached list of prefix decisions may grow"},
}
