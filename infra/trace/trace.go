// Package trace generates a replayable day of password-reset traffic for the conversion guard's
// benchmark (infra/bench -mode conversion): legitimate resets across many number prefixes and
// countries, most of whose codes are used seconds to minutes later, and SMS-pumping bursts
// (many new numbers in a few prefixes, codes never used), fast ones and slow, low ones. The
// numbers are synthetic but valid mobile numbers to the phone-number library (so the intake's
// number checks admit them); the same Params give the same trace, and a trace is written and read
// as JSON lines, so a run can be repeated exactly.
package trace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// Kinds of event.
const (
	KindSend    = "send"
	KindConvert = "convert"
)

// Event is one request of the trace: a reset sent to To under Key, or the report that Key's
// code was used. At is the offset from the trace's start.
type Event struct {
	At   time.Duration `json:"at"`
	Kind string        `json:"kind"`
	Key  string        `json:"key"`
	To   string        `json:"to,omitempty"`
	// Burst is the pumping burst the send belongs to, -1 for a legitimate one.
	Burst int `json:"burst"`
}

// Burst is one pumping attack: Numbers new numbers spread over Prefixes prefixes of the calling
// code Country, one every Every, from Start.
type Burst struct {
	Country  string        `json:"country"`
	Prefixes int           `json:"prefixes"`
	Numbers  int           `json:"numbers"`
	Start    time.Duration `json:"start"`
	Every    time.Duration `json:"every"`
	// Converted is the share of its codes used (about 0 for pumping).
	Converted float64 `json:"converted"`
}

// Params describe a trace.
type Params struct {
	Seed   uint64        `json:"seed"`
	Length time.Duration `json:"length"`
	// LegitPerSecond is the mean rate of legitimate resets (Poisson arrivals).
	LegitPerSecond float64 `json:"legit_per_second"`
	// Countries are the calling codes of legitimate traffic; PrefixesPerCountry how many
	// 6-digit prefixes each has.
	Countries          []string `json:"countries"`
	PrefixesPerCountry int      `json:"prefixes_per_country"`
	// ConvertMin and ConvertMax bound each country's conversion share (drawn uniformly).
	ConvertMin float64 `json:"convert_min"`
	ConvertMax float64 `json:"convert_max"`
	// DelayMedian is the median delay before a legitimate code is used (log-normal, from 3 s
	// to 10 min).
	DelayMedian time.Duration `json:"delay_median"`
	Bursts      []Burst       `json:"bursts"`
}

// DefaultParams is the benchmark's day: 0.03 resets a second over 8 countries and 400
// prefixes, 70 to 95 % used after a median of 40 s, and six pumping bursts: four fast ones
// (150 numbers in 2 prefixes, one every 4 s) and two slow, low ones (60 numbers in 1 prefix,
// one every 6 minutes).
func DefaultParams() Params {
	return Params{
		Seed: 22, Length: 24 * time.Hour, LegitPerSecond: 0.03,
		Countries: []string{"1", "44", "49", "33", "34", "39", "31", "61"}, PrefixesPerCountry: 50,
		ConvertMin: 0.70, ConvertMax: 0.95, DelayMedian: 40 * time.Second,
		Bursts: []Burst{
			{Country: "44", Prefixes: 2, Numbers: 150, Start: 2 * time.Hour, Every: 4 * time.Second},
			{Country: "1", Prefixes: 2, Numbers: 150, Start: 7 * time.Hour, Every: 4 * time.Second},
			{Country: "49", Prefixes: 2, Numbers: 150, Start: 12 * time.Hour, Every: 4 * time.Second},
			{Country: "33", Prefixes: 2, Numbers: 150, Start: 18 * time.Hour, Every: 4 * time.Second},
			{Country: "61", Prefixes: 1, Numbers: 60, Start: 1 * time.Hour, Every: 6 * time.Minute},
			{Country: "39", Prefixes: 1, Numbers: 60, Start: 14 * time.Hour, Every: 6 * time.Minute},
		},
	}
}

// Generate returns the trace p describes, sorted by time.
func Generate(p Params) []Event {
	rng := rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15))
	var out []Event
	out = append(out, legit(p, rng)...)
	for i, b := range p.Bursts {
		out = append(out, burst(i, b, p, rng)...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// legit returns the legitimate resets and their conversions.
func legit(p Params, rng *rand.Rand) []Event {
	share := make([]float64, len(p.Countries))
	for i := range share {
		share[i] = p.ConvertMin + rng.Float64()*(p.ConvertMax-p.ConvertMin)
	}
	var out []Event
	n := 0
	for at := expDelay(rng, p.LegitPerSecond); at < p.Length; at += expDelay(rng, p.LegitPerSecond) {
		c := rng.IntN(len(p.Countries))
		key := fmt.Sprintf("legit-%d", n)
		n++
		out = append(out, Event{At: at, Kind: KindSend, Key: key, To: number(p.Countries[c], rng.IntN(p.PrefixesPerCountry), rng), Burst: -1})
		if rng.Float64() < share[c] {
			out = append(out, Event{At: at + useDelay(rng, p.DelayMedian), Kind: KindConvert, Key: key, Burst: -1})
		}
	}
	return out
}

// burst returns burst i's sends (and the rare conversion), in prefixes no legitimate number
// uses: pumping targets premium and unallocated ranges.
func burst(i int, b Burst, p Params, rng *rand.Rand) []Event {
	var out []Event
	for j := range b.Numbers {
		at := b.Start + time.Duration(j)*b.Every
		key := fmt.Sprintf("pump-%d-%d", i, j)
		prefix := p.PrefixesPerCountry + 10*i + j%b.Prefixes
		out = append(out, Event{At: at, Kind: KindSend, Key: key, To: number(b.Country, prefix, rng), Burst: i})
		if rng.Float64() < b.Converted {
			out = append(out, Event{At: at + useDelay(rng, p.DelayMedian), Kind: KindConvert, Key: key, Burst: i})
		}
	}
	return out
}

// number returns a random number of country in its prefix number prefix: the calling code,
// then digits that make the first 6 digits (calling code included) depend on prefix alone. It
// is a valid mobile (or fixed-line-or-mobile) number to the phone-number library, so the intake
// as deployed admits it at its number checks: the prefix is the prefix-th of the country's
// 6-digit heads under which the library finds one, the rest random digits the library accepts.
func number(country string, prefix int, rng *rand.Rand) string {
	h := countryHeads(country)
	head := h.heads[prefix%len(h.heads)]
	for range 100 {
		n := "+" + head + fmt.Sprintf("%0*d", h.tail, rng.IntN(int(math.Pow10(h.tail))))
		if admitted(n) {
			return n
		}
	}
	return "+" + head + h.sample
}

// heads are a country's 6-digit heads (calling code included) under which the library finds
// valid mobile numbers, in increasing order; tail is how many digits follow a head, sample one
// such tail that is valid under every head.
type heads struct {
	heads  []string
	tail   int
	sample string
}

var (
	headsMu    sync.Mutex
	headsCache = map[string]heads{}
)

// countryHeads finds country's heads once: it walks the heads in order from the country's
// example mobile number's length and keeps those under which a number of that length is a
// valid mobile number (the same tail for every head, so the walk is deterministic).
func countryHeads(country string) heads {
	headsMu.Lock()
	defer headsMu.Unlock()
	if h, ok := headsCache[country]; ok {
		return h
	}
	cc, err := strconv.Atoi(country)
	if err != nil {
		panic("trace: calling code " + country + " is not a number")
	}
	region := phonenumbers.GetRegionCodeForCountryCode(cc)
	ex := phonenumbers.GetExampleNumberForType(region, phonenumbers.MOBILE)
	if ex == nil {
		panic("trace: no example mobile number for +" + country)
	}
	national := strconv.FormatUint(ex.GetNationalNumber(), 10)
	free := 6 - len(country)
	h := heads{tail: len(national) - free}
	h.sample = national[free:]
	for i := range int(math.Pow10(free)) {
		head := country + fmt.Sprintf("%0*d", free, i)
		if admitted("+" + head + h.sample) {
			h.heads = append(h.heads, head)
		}
	}
	if len(h.heads) == 0 {
		panic("trace: no valid mobile head for +" + country)
	}
	headsCache[country] = h
	return h
}

// admitted reports whether the library finds e164 a valid number of a type the template's
// defaults admit (mobile, or fixed line or mobile).
func admitted(e164 string) bool {
	n, err := phonenumbers.Parse(e164, "")
	if err != nil || !phonenumbers.IsValidNumber(n) {
		return false
	}
	t := phonenumbers.GetNumberType(n)
	return t == phonenumbers.MOBILE || t == phonenumbers.FIXED_LINE_OR_MOBILE
}

// expDelay is an exponential gap of mean 1/rate seconds.
func expDelay(rng *rand.Rand, rate float64) time.Duration {
	return time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
}

// useDelay is a log-normal delay around median, kept within 3 s and 10 minutes.
func useDelay(rng *rand.Rand, median time.Duration) time.Duration {
	d := time.Duration(float64(median) * math.Exp(rng.NormFloat64()))
	return min(max(d, 3*time.Second), 10*time.Minute)
}

// Write writes events as JSON lines.
func Write(w io.Writer, events []Event) error {
	enc := json.NewEncoder(w)
	for _, e := range events {
		if err := enc.Encode(e); err != nil {
			return fmt.Errorf("trace.write: %w", err)
		}
	}
	return nil
}

// Read reads events written by Write.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("trace.read line %d: %w", len(out)+1, err)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("trace.read: %w", err)
	}
	return out, nil
}
