package smssim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// Mode is what the simulator does with one send request.
type Mode string

// The fault modes of docs/design.md.
const (
	// ModeAccept records the message and answers 201.
	ModeAccept Mode = "accept"
	// ModeReject answers 400 destination_rejected without recording: permanent.
	ModeReject Mode = "reject"
	// ModeRejectCountry answers 400 country_not_supported without recording: this provider
	// does not serve the destination's country, another one may.
	ModeRejectCountry Mode = "reject_country"
	// ModeThrottle answers 429 with Retry-After without recording.
	ModeThrottle Mode = "throttle"
	// ModeUnavailable answers 503 with Retry-After without recording ("not processed").
	ModeUnavailable Mode = "unavailable"
	// ModeTimeoutBeforeAccept hangs without recording until the client gives up.
	ModeTimeoutBeforeAccept Mode = "timeout_before_accept"
	// ModeAcceptThenTimeout records the message, then hangs until the client gives up.
	ModeAcceptThenTimeout Mode = "accept_then_timeout"
	// ModeAcceptThenDrop records the message, then closes the connection without answering.
	ModeAcceptThenDrop Mode = "accept_then_drop"
	// ModeErrorAfterAccept records the message, then answers 500.
	ModeErrorAfterAccept Mode = "500_after_accept"
	// ModeLatency waits Config.Latency, then records and answers 201 — unless the client
	// stopped waiting first, in which case nothing is recorded.
	ModeLatency Mode = "latency"
)

// The faults of a broken path between the client and the provider (a load balancer, a proxy,
// the network), which the provider itself would not answer with. "After accept" records the
// message first, so the provider holds it whatever the client sees.
const (
	// ModeBadGatewayBeforeAccept answers 502 with an HTML body without recording: the request
	// never reached the provider.
	ModeBadGatewayBeforeAccept Mode = "502_before_accept"
	// ModeBadGatewayAfterAccept records the message, then answers 502 with an HTML body.
	ModeBadGatewayAfterAccept Mode = "502_after_accept"
	// ModeGatewayTimeoutAfterAccept records the message, then answers 504 with an HTML body.
	ModeGatewayTimeoutAfterAccept Mode = "504_after_accept"
	// ModeTruncatedAfterAccept records the message and answers 201, but cuts the body short
	// and closes the connection: the status is known, the body unreadable.
	ModeTruncatedAfterAccept Mode = "truncated_after_accept"
	// ModeGarbageAfterAccept records the message, then answers 200 with a body that is not
	// the provider's JSON.
	ModeGarbageAfterAccept Mode = "garbage_after_accept"
	// ModeResetAfterAccept records the message, then resets the TCP connection (RST, not FIN).
	ModeResetAfterAccept Mode = "reset_after_accept"
)

// FaultMix is the fault matrix's mix, shared by the end-to-end fault matrix (infra/workerfaults)
// and the dispatch benchmark (infra/bench): 15% accept-then-timeout, 10% accept-then-drop, 10%
// timeout-before-accept, 10% throttled, 5% 500-after-accept, 5% rejected, the rest accepted.
var FaultMix = Mix{
	{Mode: ModeAcceptThenTimeout, Weight: 15},
	{Mode: ModeAcceptThenDrop, Weight: 10},
	{Mode: ModeTimeoutBeforeAccept, Weight: 10},
	{Mode: ModeThrottle, Weight: 10},
	{Mode: ModeErrorAfterAccept, Weight: 5},
	{Mode: ModeReject, Weight: 5},
	{Mode: ModeAccept, Weight: 45},
}

// Modes lists every mode.
var Modes = []Mode{
	ModeAccept, ModeReject, ModeRejectCountry, ModeThrottle, ModeUnavailable, ModeTimeoutBeforeAccept,
	ModeAcceptThenTimeout, ModeAcceptThenDrop, ModeErrorAfterAccept, ModeLatency,
	ModeBadGatewayBeforeAccept, ModeBadGatewayAfterAccept, ModeGatewayTimeoutAfterAccept,
	ModeTruncatedAfterAccept, ModeGarbageAfterAccept, ModeResetAfterAccept,
}

var modeAliases = map[string]Mode{
	"accepted":           ModeAccept,
	"rejected":           ModeReject,
	"throttled":          ModeThrottle,
	"unavailable_503":    ModeUnavailable,
	"503":                ModeUnavailable,
	"error_after_accept": ModeErrorAfterAccept,
}

// ParseMode parses a mode name. Hyphens and underscores are interchangeable and case is
// ignored, so "accept-then-drop" is ModeAcceptThenDrop.
func ParseMode(s string) (Mode, error) {
	n := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	if m := Mode(n); slices.Contains(Modes, m) {
		return m, nil
	}
	if m, ok := modeAliases[n]; ok {
		return m, nil
	}
	return "", fmt.Errorf("smssim: unknown mode %q", s)
}

// Records reports whether the simulator records (accepts) a message in mode m, whatever the
// client then sees. ModeLatency records unless the client leaves first.
func (m Mode) Records() bool {
	switch m {
	case ModeAccept, ModeAcceptThenTimeout, ModeAcceptThenDrop, ModeErrorAfterAccept, ModeLatency,
		ModeBadGatewayAfterAccept, ModeGatewayTimeoutAfterAccept, ModeTruncatedAfterAccept,
		ModeGarbageAfterAccept, ModeResetAfterAccept:
		return true
	}
	return false
}

// Weight is one mode's share of a Mix.
type Weight struct {
	Mode   Mode
	Weight int
}

// Mix is a seeded random choice of modes, in proportion to their weights (which need not
// sum to 100).
type Mix []Weight

// ParseMix parses "accept=55,accept_then_timeout=15,throttle=10". An empty string is an
// empty mix.
func ParseMix(s string) (Mix, error) {
	var mix Mix
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("smssim: mix entry %q is not mode=weight", part)
		}
		m, err := ParseMode(name)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("smssim: mix weight %q of %s is not a non-negative integer", w, m)
		}
		mix = append(mix, Weight{Mode: m, Weight: n})
	}
	if len(mix) > 0 && mix.total() == 0 {
		return nil, fmt.Errorf("smssim: mix %q has no positive weight", s)
	}
	return mix, nil
}

// String formats m as ParseMix reads it.
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, w := range m {
		parts[i] = fmt.Sprintf("%s=%d", w.Mode, w.Weight)
	}
	return strings.Join(parts, ",")
}

func (m Mix) total() int {
	t := 0
	for _, w := range m {
		t += w.Weight
	}
	return t
}

// pick draws one mode with r.
func (m Mix) pick(r *rand.Rand) Mode {
	n := r.IntN(m.total())
	for _, w := range m {
		if n < w.Weight {
			return w.Mode
		}
		n -= w.Weight
	}
	return ModeAccept
}

// Rule applies Mode to every destination whose number ends in Suffix.
type Rule struct {
	Suffix string
	Mode   Mode
}

// ParseRules parses "13=reject,7=throttle". The first matching rule wins.
func ParseRules(s string) ([]Rule, error) {
	var rules []Rule
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		suffix, name, ok := strings.Cut(part, "=")
		suffix = strings.TrimSpace(suffix)
		if !ok || suffix == "" || strings.Trim(suffix, "0123456789") != "" {
			return nil, fmt.Errorf("smssim: rule %q is not digits=mode", part)
		}
		m, err := ParseMode(name)
		if err != nil {
			return nil, err
		}
		rules = append(rules, Rule{Suffix: suffix, Mode: m})
	}
	return rules, nil
}
