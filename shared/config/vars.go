package config

import "slices"

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
	digestOnly    = []string{"digest"}
	receiptsOnly  = []string{"provider-events"}
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
	{EnvNotificationsTable, []string{"intake", "dispatch", "reconcile", "sweeper", "audit-replay", "provider-events"}, "", "the notifications table"},
	{EnvAuditTable, auditWriters, "", "the audit table"},
	{EnvDispatchQueueURL, policyReaders, "", "the dispatch queue"},
	{EnvReconcileQueueURL, workers, "", "the reconcile queue"},
	{EnvPolicyVersion, policyReaders, "default-1", "names the policy stamped on every record and audit entry"},
	{EnvSafetyMarginSeconds, policyReaders, "60", "`dispatch_deadline = expires_at − margin`; 0 is refused"},
	{EnvStatusGraceHours, policyReaders, "24", "record TTL = `expires_at` + grace; 0 is refused, and the workers refuse a grace shorter than the lease and reconciliation horizon"},
	{EnvMaxAheadHours, policyReaders, "24", "how far ahead `expires_at` may be"},
	{EnvMaxAttempts, policyReaders, "5", "provider calls per notification"},
	{EnvSealKMSKeyID, []string{"intake", "dispatch"}, "", "the KMS key sealing `{to, params, locale}` (AWS)"},
	{EnvSealLocalKey, []string{"intake", "dispatch"}, "", "the sealing key instead of KMS (local, base64 of 32 bytes; a secret)"},
	{EnvDestinationPepperParam, intakeOnly, "", "the SSM SecureString holding the destination fingerprint's HMAC pepper (AWS)"},
	{EnvDestinationPepper, intakeOnly, "", "the pepper itself (local, at least 16 bytes; a secret)"},
	{EnvFingerprintKeyParam, intakeOnly, "", "the SSM SecureString holding the request fingerprint's HMAC key (AWS)"},
	{EnvFingerprintKey, intakeOnly, "", "the key itself (local, at least 32 bytes, not the pepper nor the sealing key; a secret)"},
	{EnvLogLevel, allFunctions, "info", "debug, info, warn, error"},
	{EnvMetricsNamespace, allFunctions, "resetnotify", "CloudWatch namespace of every metric; the template sets `resetnotify/<stack name>`"},
	{EnvLeaseSeconds, workers, "30", "how long a dispatch worker holds a record while calling the provider; at least `SMS_TIMEOUT` + 5 s"},
	{EnvMinValiditySeconds, workers, "1", "the least time before the dispatch deadline worth sending with (never below the provider's minimum)"},
	{EnvMaxReconciles, workers, "10", "inconclusive lookups allowed per attempt"},
	{EnvBackoffBaseMS, workers, "1000", "base of the jittered exponential backoff of retries and lookups, in ms"},
	{EnvBackoffMaxSeconds, workers, "300", "cap of that backoff, in seconds"},
	{EnvSMSMaxSegments, []string{"intake", "dispatch"}, "2", "SMS segment budget of a rendered message"},
	{EnvGuardTable, intakeOnly, "", "the abuse guard's counter table; unset turns the counters off"},
	{EnvGuardPerHour, intakeOnly, "5", "admissions per destination per UTC clock hour (0: off)"},
	{EnvGuardPerDay, intakeOnly, "10", "admissions per destination per UTC day (0: off)"},
	{EnvGuardPrefixDigits, intakeOnly, "6", "digits of the number, calling code included, that form its prefix"},
	{EnvGuardPrefixPerMinute, intakeOnly, "20", "distinct destinations a prefix may admit per UTC minute (0: off)"},
	{EnvGuardDecisionMS, intakeOnly, "500", "how long, in ms, the request that created a record may still refuse it, and its duplicates wait at most for that decision"},
	{EnvAllowedCountries, intakeOnly, "", "ISO 3166-1 alpha-2 countries intake accepts, e.g. `US,CA,GB`; a number is in the country its digits belong to (+1 876 is JM); unset allows every number (template: `US,CA`)"},
	{EnvSMSProviders, feedbackUsers, "", "the ordered provider chain, e.g. `endusersms,sinch`: `simulator`, `simulator2`, `endusersms`, `sinch`; the first is tried first (intake: whom to report conversions to)"},
	{EnvSMSProvider, feedbackUsers, "", "the single provider of earlier versions, read as a chain of one when `SMS_PROVIDERS` is unset"},
	{EnvSMSTimeout, workers, DefaultSMSTimeout.String(), "bound on one provider call, a Go duration such as `5s` or `800ms`"},
	{EnvSMSVisibilitySeconds, workers, "simulator 0, endusersms 300, sinch 60", "how long after an attempt a lookup waits before \"not found\" counts; the reconcile queue's delay must be at least this"},
	{EnvSMSSimulatorURL, feedbackProviderUsers, "", "base URL of the simulator (`simulator`)"},
	{EnvSMSSimulator2URL, feedbackProviderUsers, "", "base URL of the second simulated provider (`simulator2`)"},
	{EnvSMSSimulatorToken, providerUsers, "", "the simulator's bearer token, when it requires one (a secret)"},
	{EnvSMSOriginationIdentity, providerUsers, "", "phone number, sender ID or pool, ID or ARN (`endusersms`)"},
	{EnvSMSConfigurationSet, []string{"dispatch", "reconcile", "provider-events"}, "", "configuration set whose event destination feeds provider-events (`endusersms`); provider-events applies only its events"},
	{EnvSMSProtectConfiguration, []string{"dispatch"}, "", "protect configuration every send names, whose country rules End User Messaging enforces (`endusersms`; the template sets it)"},
	{EnvSMSEndpoint, feedbackProviderUsers, "", "End User Messaging SMS endpoint override (tests and emulators)"},
	{EnvSinchBaseURL, providerUsers, DefaultSinchBaseURL, "Sinch's regional API root (`sinch`)"},
	{EnvSinchServicePlanID, providerUsers, "", "Sinch service plan (`sinch`)"},
	{EnvSinchAPITokenParam, providerUsers, "", "the SSM SecureString holding the Sinch API token (AWS)"},
	{EnvSinchAPIToken, providerUsers, "", "the Sinch API token itself (local; a secret)"},
	{EnvSinchFrom, providerUsers, "", "Sinch sender number or ID (`sinch`)"},
	{EnvSinchCallbackURL, []string{"dispatch"}, "", "where Sinch posts delivery reports, the Sinch webhook route without its token (`sinch`; unset: no reports are asked for)"},
	{EnvSinchCallbackTokenParam, []string{"dispatch", "provider-events"}, "", "the SSM SecureString holding the Sinch callback token (AWS)"},
	{EnvSinchCallbackToken, []string{"dispatch", "provider-events"}, "", "the token itself (local, at least 16 bytes; a secret): dispatch adds it to the callback URL's query (`token`), the Sinch webhook compares it; neither disables that webhook"},
	{EnvReceiptsTable, []string{"provider-events", "reconcile"}, "", "the receipts table; reconcile runs without it"},
	{EnvReceiptRetentionDays, receiptsOnly, "7", "receipt TTL in days"},
	{EnvSimulatorWebhookTokenParam, receiptsOnly, "", "the SSM SecureString holding the simulator webhook's token (AWS)"},
	{EnvSimulatorWebhookToken, receiptsOnly, "", "the token itself (local, at least 16 bytes; a secret); neither disables the webhook"},
	{EnvAuditRetentionDays, auditWriters, "400", "audit entry TTL in days"},
	{EnvAuditDigestPeriodMinutes, digestOnly, "60", "length of a signed digest period (divides a day); 1 locally"},
	{EnvAuditDigestGraceSeconds, digestOnly, "90", "how long after its end a period is closed; 10 locally"},
	{EnvAuditDigestLagBoundSeconds, []string{"digest", "auditctl"}, "900", "how far the digest step may fall behind before a digest not yet written is missing (verify: late until then) and the digest-lag alarm's threshold"},
	{EnvAuditDigestKMSKeyID, digestOnly, "", "the KMS key that signs digests (AWS)"},
	{EnvAuditDigestLocalKey, digestOnly, "", "the signing key's PEM instead of KMS (local; a secret)"},
	{EnvAuditDigestPublicKey, []string{"auditctl"}, "", "PEM file of the digests' public key; no function reads it, the local stack prints it"},
	{EnvLambdaFunctionName, []string{"audit", "audit-replay"}, "", "set by Lambda: the actor recorded on audit entries"},
	{EnvLambdaFunctionVersion, []string{"audit", "audit-replay"}, "", "set by Lambda: the actor's version"},
	{EnvConversionTable, conversionUsers, "", "the conversion counters and prefix decisions; unset turns the conversion guard off"},
	{EnvConversionWindowHours, conversionUsers, "24", "how far back a prefix's sends and conversions are summed"},
	{EnvConversionMinSends, conversionUsers, "20", "sends in the window before a prefix can be judged"},
	{EnvConversionBlockBelowPercent, conversionUsers, "20", "conversion share (percent) under which a prefix is blocked (0: off)"},
	{EnvConversionBlockHours, conversionUsers, "12", "how long an automatic prefix block lasts"},
	{EnvConversionRefreshSeconds, conversionUsers, "5", "how old intake's cached list of prefix decisions may grow"},
}
