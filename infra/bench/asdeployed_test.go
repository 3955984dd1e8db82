package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/seal"
)

// templateDefaults reads what template.yaml gives the intake and dispatch functions.
func templateDefaults(t *testing.T) (intake, dispatch map[string]string) {
	t.Helper()
	tpl, err := samtemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if intake, err = tpl.Env("IntakeFunction"); err != nil {
		t.Fatal(err)
	}
	if dispatch, err = tpl.Env("DispatchFunction"); err != nil {
		t.Fatal(err)
	}
	return intake, dispatch
}

// TestTemplateEnv: the benchmarks' environment is the template's, the stand-ins over it.
func TestTemplateEnv(t *testing.T) {
	intake, _ := templateDefaults(t)
	env, err := templateEnv("IntakeFunction", map[string]string{config.EnvGuardTable: "g"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{config.EnvAllowedCountries, config.EnvGuardPerHour, config.EnvGuardPrefixDigits} {
		if env(name) == "" || env(name) != intake[name] {
			t.Errorf("%s = %q, want the template's %q", name, env(name), intake[name])
		}
	}
	if env(config.EnvGuardTable) != "g" {
		t.Errorf("the stand-in guard table: %q", env(config.EnvGuardTable))
	}
}

// TestBenchmarksBuildAsDeployed checks that the functions the benchmarks measure are built as
// the template deploys them: the pipeline's intake (dispatch, replay, failover, cost) and the
// admission benchmark's have the guard, the allow-list and the conversion guard; the workers
// and the floor's dispatcher have the template's attempts, timeout and conversion guard.
func TestBenchmarksBuildAsDeployed(t *testing.T) {
	testenv.DynamoDB(t) // skips or fails as the package documents when there is no emulator
	testenv.SQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	intakeVars, dispatchVars := templateDefaults(t)
	ddb, sqsEndpoint := os.Getenv(emulator.EnvDynamoDBEndpoint), os.Getenv(emulator.EnvSQSEndpoint)
	p, err := newPipeline(ctx, ddb, sqsEndpoint, smssim.Config{}, "asdeployed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	in := p.intake
	if in.Guard == nil || in.Conversions == nil || !in.Countries.Allows("US") || in.Countries.Allows("GB") ||
		intakeVars[config.EnvAllowedCountries] != "US,CA" {
		t.Errorf("pipeline intake: guard %v, conversions %v, allows US %v, GB %v", in.Guard != nil, in.Conversions != nil, in.Countries.Allows("US"), in.Countries.Allows("GB"))
	}
	// Sealed as deployed: a KMS key (moto's) and the seal-keys table, the envelope naming a
	// 16-byte data key ID; the dispatcher opens it.
	sealed, err := in.Sealer.Seal(ctx, "k", notify.Secret{To: "+12125550123", Locale: "en"})
	if err != nil {
		t.Fatal(err)
	}
	if p.sealing[config.EnvSealKMSKeyID] == "" || seal.KeyKind(sealed[1]) != seal.KindKMSStored || sealed[3] != seal.KeyRefSize {
		t.Errorf("the pipeline seals with %v: envelope kind %s, reference of %d bytes; want KMS with the seal-keys table", p.sealing, seal.KeyKind(sealed[1]), sealed[3])
	}
	if _, err := p.dispatcher.Opener.Open(ctx, "k", sealed); err != nil {
		t.Errorf("the pipeline's dispatcher cannot open its intake's envelope: %v", err)
	}
	timeout, _ := time.ParseDuration(dispatchVars[config.EnvSMSTimeout])
	for name, s := range map[string]struct {
		conversions bool
		attempts    int
		timeout     time.Duration
	}{
		"dispatcher": {p.dispatcher.Conversions != nil, p.dispatcher.Settings.MaxAttempts, p.dispatcher.Settings.ProviderTimeout},
		"reconciler": {true, p.reconciler.Settings.MaxAttempts, p.reconciler.Settings.ProviderTimeout},
	} {
		if !s.conversions || s.attempts != notify.DefaultPolicy().MaxAttempts || timeout == 0 || s.timeout != timeout {
			t.Errorf("%s: conversion guard %v, max attempts %d, provider timeout %s; want the template's (on, %d, %s)", name, s.conversions, s.attempts, s.timeout, notify.DefaultPolicy().MaxAttempts, timeout)
		}
	}
	cfg := localConfig(ddb)
	_, names, drop, err := deployedTables(ctx, cfg, "bench-asdeployed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	d, err := newDeployed(ctx, cfg, names)
	if err != nil {
		t.Fatal(err)
	}
	if d.in.Guard == nil || d.in.Conversions == nil || !d.in.Countries.Allows("CA") || d.in.Countries.Allows("GB") {
		t.Errorf("the admission benchmark's intake is not as deployed: guard %v, conversions %v", d.in.Guard != nil, d.in.Conversions != nil)
	}
	f, dropFloor, err := newFloor(ctx, ddb, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dropFloor)
	if f.d.Conversions == nil || f.d.Settings.MaxAttempts != notify.DefaultPolicy().MaxAttempts {
		t.Errorf("floor dispatcher: conversion guard %v, max attempts %d", f.d.Conversions != nil, f.d.Settings.MaxAttempts)
	}
}
