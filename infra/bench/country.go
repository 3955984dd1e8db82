package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/phoneregion"
)

// countryNumbers are the numbers countryBench places, by what the allow-list decides for them
// at the template's default (US,CA).
var countryNumbers = []struct{ name, number string }{
	{"us", "+12125550100"}, {"ca", "+14165550100"}, {"jm", "+18765550100"}, {"gb", "+447911123456"}, {"none", "+15555550100"},
}

// countryBench measures the country allow-list's one step per admission at the template's
// default (AllowedCountries=US,CA): placing the number in its country with the phone-number
// metadata and checking the list, in CPU time on this machine; it makes no request. A new
// number each time (the step remembers only the last one), the mean of n.
func countryBench(out io.Writer, n int) error {
	env, err := templateEnv("IntakeFunction", nil)
	if err != nil {
		return err
	}
	list := env(config.EnvAllowedCountries)
	c, err := notify.NewCountries(strings.Split(list, ","), phoneregion.Regions{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "country_check_measured_against=AllowedCountries=%s (template.yaml's default), the phone-number metadata as shared/phoneregion applies it (written out by infra/phonemeta), mean of %d, CPU only\n", list, n)
	for _, tc := range countryNumbers {
		numbers := make([]string, n)
		for i := range numbers {
			// Same country and length, a different subscriber each time.
			numbers[i] = fmt.Sprintf("%s%04d", tc.number[:len(tc.number)-4], i%10000)
		}
		start := time.Now()
		allowed := 0
		for _, number := range numbers {
			if c.Allows(c.Of(number)) {
				allowed++
			}
		}
		fmt.Fprintf(out, "country_check_us_%s=%.1f (allowed %d of %d)\n", tc.name, float64(time.Since(start).Microseconds())/float64(n), allowed, n)
	}
	return nil
}
