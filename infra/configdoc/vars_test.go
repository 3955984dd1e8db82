package configdoc_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/configdoc"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
)

// TestVarsListEveryVariable checks that Vars lists every variable this package names (each
// `Env... = "NAME"` constant of its sources), once.
func TestVarsListEveryVariable(t *testing.T) {
	named := map[string]bool{}
	constant := regexp.MustCompile(`(?m)^\s*(?:const\s+)?Env\w+\s*=\s*"([A-Z][A-Z0-9_]*)"`)
	files, err := filepath.Glob("../../shared/config/*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range constant.FindAllStringSubmatch(string(src), -1) {
			named[m[1]] = true
		}
	}
	listed := map[string]bool{}
	for _, v := range configdoc.Vars() {
		if listed[v.Name] {
			t.Errorf("%s is listed twice", v.Name)
		}
		listed[v.Name] = true
		if !named[v.Name] {
			t.Errorf("%s is listed but named by no Env constant", v.Name)
		}
		if v.Meaning == "" || len(v.Functions) == 0 {
			t.Errorf("%s has no meaning or no reader", v.Name)
		}
	}
	for name := range named {
		if !listed[name] {
			t.Errorf("%s is named but not listed in Vars", name)
		}
	}
	if len(named) < 50 || !slices.ContainsFunc(configdoc.Vars(), func(v configdoc.Var) bool { return v.Name == "LEASE_SECONDS" }) {
		t.Errorf("found only %d variables", len(named))
	}
}

// TestVarsDefaultsAreTheDefaults checks the defaults Vars documents against the values that
// apply (those of other packages are checked there: the workers' settings in package workercore).
func TestVarsDefaultsAreTheDefaults(t *testing.T) {
	p, g := notify.DefaultPolicy(), notify.DefaultGuardLimits()
	want := map[string]string{
		config.EnvPolicyVersion:              p.Version,
		config.EnvSafetyMarginSeconds:        strconv.Itoa(int(p.SafetyMargin / time.Second)),
		config.EnvStatusGraceHours:           strconv.Itoa(int(p.StatusGrace / time.Hour)),
		config.EnvMaxAheadHours:              strconv.Itoa(int(p.MaxAhead / time.Hour)),
		config.EnvMaxAttempts:                strconv.Itoa(p.MaxAttempts),
		config.EnvGuardPerHour:               strconv.Itoa(g.PerHour),
		config.EnvGuardPerDay:                strconv.Itoa(g.PerDay),
		config.EnvGuardPrefixDigits:          strconv.Itoa(g.PrefixDigits),
		config.EnvGuardPrefixPerMinute:       strconv.Itoa(g.PrefixPerMinute),
		config.EnvAllowedNumberTypes:         numberTypes(notify.DefaultNumberTypes),
		config.EnvReceiptRetentionDays:       strconv.Itoa(int(config.DefaultReceiptRetention / (24 * time.Hour))),
		config.EnvAuditRetentionDays:         strconv.Itoa(int(config.DefaultAuditRetention / (24 * time.Hour))),
		config.EnvAuditDigestPeriodMinutes:   strconv.Itoa(int(config.DefaultDigestPeriod / time.Minute)),
		config.EnvAuditDigestGraceSeconds:    strconv.Itoa(int(config.DefaultDigestGrace / time.Second)),
		config.EnvAuditDigestLagBoundSeconds: strconv.Itoa(int(config.DefaultDigestLagBound / time.Second)),
		config.EnvLogLevel:                   "info",
	}
	for _, v := range configdoc.Vars() {
		if w, ok := want[v.Name]; ok && v.Default != w {
			t.Errorf("Vars says %s defaults to %q, it is %q", v.Name, v.Default, w)
		}
	}
}

// numberTypes joins types as ALLOWED_NUMBER_TYPES lists them.
func numberTypes(types []notify.NumberType) string {
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = string(t)
	}
	return strings.Join(s, ",")
}
