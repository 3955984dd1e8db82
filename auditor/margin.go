package auditor

import (
	"sort"
	"time"

	"github.com/resetnotify/resetnotify/shared/auditlog"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// The recommendation rule of MarginReport.
const (
	// MinMarginSamples is the fewest accepted→delivered samples for which a margin is
	// recommended: below 100 the p99 is just the largest value seen.
	MinMarginSamples = 100
	// MarginHeadroom is the share of p99 added on top of it.
	MarginHeadroom = 0.25
	// MinMarginHeadroom is the least headroom added.
	MinMarginHeadroom = 5 * time.Second
	// MarginStep is what the recommendation is rounded up to.
	MarginStep = 5 * time.Second
)

// PolicyMargin is a policy version and the safety margin it set, with how many sampled
// notifications were admitted under it.
type PolicyMargin struct {
	PolicyVersion  string `json:"policy_version"`
	SafetyMarginMS int64  `json:"safety_margin_ms"`
	Samples        int    `json:"samples"`
}

// MarginReport is the accepted→delivered latency distribution and the safety margin it
// supports. A sample is one notification with both an ADMITTED entry and a
// RECEIPT_DELIVERED entry in the range; its latency is the difference of their at. The
// latency includes the wait in the dispatch queue, so it errs on the safe side.
//
// The recommendation is p99 plus headroom of MarginHeadroom × p99 (at least
// MinMarginHeadroom), rounded up to a multiple of MarginStep. It is given only with at least
// MinMarginSamples samples; with fewer, Enough is false and Recommended is zero.
type MarginReport struct {
	Samples     int            `json:"samples"`
	P50         time.Duration  `json:"-"`
	P95         time.Duration  `json:"-"`
	P99         time.Duration  `json:"-"`
	Max         time.Duration  `json:"-"`
	Enough      bool           `json:"enough"`
	Recommended time.Duration  `json:"-"`
	InForce     []PolicyMargin `json:"in_force"`
}

// MarginSampler accumulates entries, in any order, into a MarginReport. It keeps one time per
// notification that is still waiting for its receipt and one duration per sample.
type MarginSampler struct {
	admitted  map[string]admission
	delivered map[string]time.Time
}

type admission struct {
	at     time.Time
	policy PolicyMargin
}

// Add takes one entry into account.
func (s *MarginSampler) Add(e auditlog.Entry) {
	if s.admitted == nil {
		s.admitted, s.delivered = map[string]admission{}, map[string]time.Time{}
	}
	switch e.Reason {
	case notify.ReasonAdmitted:
		s.admitted[e.NotificationID] = admission{e.At, PolicyMargin{PolicyVersion: e.PolicyVersion, SafetyMarginMS: e.SafetyMarginMS}}
	case notify.ReasonReceiptDelivered:
		s.delivered[e.NotificationID] = e.At
	}
}

// Report computes the distribution of what was added.
func (s *MarginSampler) Report() MarginReport {
	var lat []time.Duration
	inForce := map[PolicyMargin]int{}
	for id, d := range s.delivered {
		a, ok := s.admitted[id]
		if !ok || d.Before(a.at) {
			continue
		}
		lat = append(lat, d.Sub(a.at))
		inForce[a.policy]++
	}
	r := MarginReport{Samples: len(lat), InForce: []PolicyMargin{}}
	for p, n := range inForce {
		p.Samples = n
		r.InForce = append(r.InForce, p)
	}
	sort.Slice(r.InForce, func(i, j int) bool {
		a, b := r.InForce[i], r.InForce[j]
		if a.PolicyVersion != b.PolicyVersion {
			return a.PolicyVersion < b.PolicyVersion
		}
		return a.SafetyMarginMS < b.SafetyMarginMS
	})
	if len(lat) == 0 {
		return r
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.P50, r.P95, r.P99 = percentile(lat, 50), percentile(lat, 95), percentile(lat, 99)
	r.Max = lat[len(lat)-1]
	if len(lat) >= MinMarginSamples {
		r.Enough = true
		r.Recommended = Recommend(r.P99)
	}
	return r
}

// Recommend applies the recommendation rule of MarginReport to p99.
func Recommend(p99 time.Duration) time.Duration {
	head := max(time.Duration(float64(p99)*MarginHeadroom), MinMarginHeadroom)
	m := p99 + head
	if rem := m % MarginStep; rem != 0 {
		m += MarginStep - rem
	}
	return m
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n)
	return sorted[max(rank, 1)-1]
}
