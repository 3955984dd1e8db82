package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/dev/samtemplate"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	"github.com/resetnotify/resetnotify/shared/sqsqueue"
	intakewire "github.com/resetnotify/resetnotify/shared/wire/intake"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
)

// The benchmarks build every function they measure as deployed: the environment template.yaml
// gives it at its parameters' defaults (samtemplate.Env), read by the function's own wiring,
// with local stand-ins only for what a deploy creates (tables, queues, the KMS key and the SSM
// secrets: local keys) and for the provider: the SMS simulator instead of End User Messaging
// (SMS_PROVIDERS=simulator), with the simulator's own lookup window (SMS_VISIBILITY_SECONDS,
// a property of the provider, not of the deploy). A figure measured on anything else carries
// a name of its own (guard_off_..., ..._no_cooldown).

// benchTemplate is template.yaml, found at the module's root from the working directory (the
// root under make bench, cmd/bench under go test).
var benchTemplate = sync.OnceValues(func() (*samtemplate.Template, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return samtemplate.Load(filepath.Join(dir, "template.yaml"))
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil, errors.New("bench: template.yaml not found: run from inside the module")
		}
		dir = parent
	}
})

// templateEnv returns the environment template.yaml gives function id at its defaults, with
// local over it.
func templateEnv(id string, local map[string]string) (func(string) string, error) {
	tpl, err := benchTemplate()
	if err != nil {
		return nil, err
	}
	env, err := tpl.Env(id)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	maps.Copy(env, local)
	return func(k string) string { return env[k] }, nil
}

// intakeStandIns are the local stand-ins of the intake's deploy-made settings: its tables, its
// queue's URL, fresh local keys in place of KMS and the SSM parameters, and the simulator at
// simURL as the provider conversions are reported to (none when simURL is empty: a report is
// a call to the provider, no AWS request, and the benchmarks without a simulator count only
// AWS requests).
func intakeStandIns(names intakeTables, dispatchURL, simURL string, sealKey []byte) map[string]string {
	return map[string]string{
		config.EnvNotificationsTable: names.notifications,
		config.EnvGuardTable:         names.guard,
		config.EnvConversionTable:    names.conversions,
		config.EnvDispatchQueueURL:   dispatchURL,
		config.EnvSealLocalKey:       base64.StdEncoding.EncodeToString(sealKey),
		config.EnvDestinationPepper:  base64.StdEncoding.EncodeToString(randomKey()),
		config.EnvFingerprintKey:     base64.StdEncoding.EncodeToString(randomKey()),
		config.EnvSMSProviders:       config.SMSSimulator, config.EnvSMSSimulatorURL: simURL,
	}
}

// intakeTables are the tables an intake as deployed writes.
type intakeTables struct{ notifications, guard, conversions string }

// deployedIntake builds the admission service the intake function builds (intakewire.Service)
// from template.yaml's environment over names (intakeStandIns), its clients on awsCfg.
func deployedIntake(ctx context.Context, awsCfg aws.Config, names intakeTables, dispatchURL, simURL string, sealKey []byte) (*notify.Intake, error) {
	env, err := templateEnv("IntakeFunction", intakeStandIns(names, dispatchURL, simURL, sealKey))
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(env, config.NeedIntake)
	if err != nil {
		return nil, fmt.Errorf("bench: intake as deployed: %w", err)
	}
	in, err := intakewire.Service(ctx, cfg, awsCfg)
	if err != nil {
		return nil, fmt.Errorf("bench: intake as deployed: %w", err)
	}
	return in, nil
}

// workerWiring returns what the worker function id (DispatchFunction, ReconcileFunction) is
// built from as deployed, over the pipeline's tables and queues, the simulator at simURL
// standing in for the provider with its lookup window visibility.
func (p *pipeline) workerWiringFor(id string, simURL string, visibility time.Duration, sealKey []byte, need config.Need) (workercorewire.Wiring, error) {
	env, err := templateEnv(id, map[string]string{
		config.EnvNotificationsTable: p.table, config.EnvConversionTable: p.conversions, config.EnvGuardTable: p.guard,
		config.EnvDispatchQueueURL: p.dispatchURL, config.EnvReconcileQueueURL: p.reconcileURL,
		config.EnvSealLocalKey: base64.StdEncoding.EncodeToString(sealKey),
		config.EnvSMSProviders: config.SMSSimulator, config.EnvSMSSimulatorURL: simURL,
		config.EnvSMSVisibilitySeconds: strconv.Itoa(int(visibility / time.Second)),
	})
	if err != nil {
		return workercorewire.Wiring{}, err
	}
	w, err := workercorewire.FromEnv(p.countedCfg, env, io.Discard, need)
	if err != nil {
		return workercorewire.Wiring{}, fmt.Errorf("bench: %s as deployed: %w", id, err)
	}
	w.DynamoDBEndpoint, w.SQSEndpoint = p.ddbEndpoint, p.sqsEndpoint
	return w, nil
}

// setChain makes both workers' provider chain kinds, the second simulator at url2.
func (p *pipeline) setChain(url2 string, kinds ...string) {
	for _, w := range []*workercorewire.Wiring{&p.wiring, &p.reconcileWiring} {
		w.SMS.Chain, w.SMS.Kind, w.SMS.Simulator2URL = kinds, kinds[0], url2
	}
}

// intakeQueue is the dispatch queue the pipeline's intake sends to, on the counted client.
func (p *pipeline) intakeQueue() *sqsqueue.Queue { return sqsqueue.New(p.counted, p.dispatchURL, "") }
