package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// The conversion guard's variables, read by intake (the block check and the conversion
// counts) and dispatch (the send counts and the block decision). CONVERSION_TABLE is required
// there; Off turns the guard off, explicitly: nothing is counted and no prefix is blocked.
const (
	EnvConversionTable             = "CONVERSION_TABLE"
	EnvConversionWindowHours       = "CONVERSION_WINDOW_HOURS"
	EnvConversionMinSends          = "CONVERSION_MIN_SENDS"
	EnvConversionBlockBelowPercent = "CONVERSION_BLOCK_BELOW_PERCENT"
	EnvConversionBlockHours        = "CONVERSION_BLOCK_HOURS"
	EnvConversionRefreshSeconds    = "CONVERSION_REFRESH_SECONDS"
)

// Conversion is the conversion guard's configuration.
type Conversion struct {
	// Table is CONVERSION_TABLE; empty when it is Off: the conversion guard is off.
	Table string
	// Policy is notify.DefaultConversionPolicy with the CONVERSION_* variables applied.
	Policy notify.ConversionPolicy
	// FeedbackProviders is the provider chain (SMS_PROVIDERS, else SMS_PROVIDER as a chain of
	// one): intake reports a conversion to the provider that sent the message, when it takes
	// feedback (endusersms, simulator, simulator2). FeedbackSimulatorURL and
	// FeedbackSimulator2URL are SMS_SIMULATOR_URL and SMS_SIMULATOR2_URL, FeedbackEndpoint
	// SMS_ENDPOINT. Intake reads no sending credential.
	FeedbackProviders     []string
	FeedbackSimulatorURL  string
	FeedbackSimulator2URL string
	FeedbackEndpoint      string
}

// feedbackProviders returns SMS_PROVIDERS as a list, else SMS_PROVIDER as a list of one.
func (r *reader) feedbackProviders() []string {
	v := r.get(EnvSMSProviders)
	if strings.TrimSpace(v) == "" {
		v = r.get(EnvSMSProvider)
	}
	var chain []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			chain = append(chain, p)
		}
	}
	return chain
}

// conversion reads the conversion guard's settings.
func (r *reader) conversion() Conversion {
	p := notify.DefaultConversionPolicy()
	must := "must be a whole number, 1 or more"
	r.positiveDuration(EnvConversionWindowHours, time.Hour, &p.Window, must)
	r.positiveDuration(EnvConversionBlockHours, time.Hour, &p.BlockFor, must)
	r.positiveDuration(EnvConversionRefreshSeconds, time.Second, &p.Refresh, must)
	r.positiveCount(EnvConversionMinSends, &p.MinSends)
	if v, ok := count(r.get(EnvConversionBlockBelowPercent)); !ok || v > 100 {
		r.problem(EnvConversionBlockBelowPercent, "must be a whole number of percent, 0 (off) to 100")
	} else if v >= 0 {
		p.BlockBelow = float64(v) / 100
	}
	if err := p.Validate(); err != nil {
		r.errs = append(r.errs, fmt.Errorf("%s: %w", EnvConversionWindowHours, err))
	}
	return Conversion{Table: r.conversionTable(), Policy: p,
		FeedbackProviders: r.feedbackProviders(), FeedbackSimulatorURL: r.get(EnvSMSSimulatorURL),
		FeedbackSimulator2URL: r.get(EnvSMSSimulator2URL), FeedbackEndpoint: r.get(EnvSMSEndpoint)}
}

// conversionTable reads CONVERSION_TABLE: a table name, or Off (""). Left empty in a function
// that needs it, it is an error: a stack never runs without the conversion guard by omission.
func (r *reader) conversionTable() string {
	switch v := r.get(EnvConversionTable); {
	case strings.EqualFold(v, Off):
		return ""
	case v == "" && r.need&NeedConversionTable != 0:
		r.problem(EnvConversionTable, "is required: it names the conversion guard's table (template: ConversionTable); "+
			"set it to %q, explicitly, to run without blocking prefixes whose codes nobody uses (docs/abuse-guards.md)", Off)
		return ""
	default:
		return v
	}
}
