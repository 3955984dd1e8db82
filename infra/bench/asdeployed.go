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
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/adapters/sqsqueue"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/notify"
	intakewire "github.com/resetnotify/resetnotify/shared/wire/intake"
	workercorewire "github.com/resetnotify/resetnotify/shared/wire/workercore"
)

// The benchmarks build every function they measure as deployed: the environment template.yaml
// gives it at its parameters' defaults (samtemplate.Env), read by the function's own wiring,
// with local stand-ins only for what a deploy creates (tables, queues, the SSM secrets: local
// keys; the sealing KMS key: one in moto's KMS, with the seal-keys table, where moto runs) and
// for the provider: the SMS simulator instead of End User Messaging
// (SMS_PROVIDERS=simulator), with the simulator's own lookup window (SMS_VISIBILITY_SECONDS,
// a property of the provider, not of the deploy). A figure measured on anything else carries
// a name of its own (guard_off_..., ..._no_cooldown).

// benchTemplate is template.yaml, found at the module's root from the working directory (the
// root under make bench, infra/bench under go test).
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
// queue's URL, the sealing key sealing, fresh local keys in place of the SSM parameters, and
// the simulator at simURL as the provider conversions are reported to (none when simURL is
// empty: a report is a call to the provider, no AWS request, and the benchmarks without a
// simulator count only AWS requests).
func intakeStandIns(names intakeTables, dispatchURL, simURL string, sealing map[string]string) map[string]string {
	env := map[string]string{
		config.EnvNotificationsTable: names.notifications,
		config.EnvGuardTable:         names.guard,
		config.EnvConversionTable:    names.conversions,
		config.EnvDispatchQueueURL:   dispatchURL,
		config.EnvDestinationPepper:  base64.StdEncoding.EncodeToString(randomKey()),
		config.EnvFingerprintKey:     base64.StdEncoding.EncodeToString(randomKey()),
		config.EnvSMSProviders:       config.SMSSimulator, config.EnvSMSSimulatorURL: simURL,
	}
	maps.Copy(env, sealing)
	return env
}

// localSealing seals with the static key key (SEAL_LOCAL_KEY): for the modes that run on
// DynamoDB Local alone and measure a warm instance, whose seal makes no request with either
// key (KMS is called once per data key: the cost mode counts it).
func localSealing(key []byte) map[string]string {
	return map[string]string{config.EnvSealLocalKey: base64.StdEncoding.EncodeToString(key)}
}

// kmsSealing is the sealing key as deployed: SEAL_KMS_KEY_ID, a key made in moto's KMS at
// motoEndpoint, and SEAL_KEYS_TABLE, table (which the caller creates). moto's data key
// ciphertexts are 96 bytes where AWS's are 184; either way they are in the seal-keys table,
// not in the records, whose envelope names a 16-byte ID.
func kmsSealing(ctx context.Context, motoEndpoint, table string) (map[string]string, error) {
	cfg := aws.Config{Region: emulator.Region, Credentials: emulator.LocalCredentials()}
	client := kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = aws.String(motoEndpoint) })
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("resetnotify bench sealing key")})
	if err != nil {
		return nil, fmt.Errorf("bench: sealing key in moto: %w", err)
	}
	return map[string]string{config.EnvSealKMSKeyID: aws.ToString(out.KeyMetadata.Arn), config.EnvSealKeysTable: table}, nil
}

// serviceEndpoints sends the named services' clients made from an aws.Config to their own
// endpoints, over its BaseEndpoint (the benchmarks' configs name DynamoDB Local): what
// AWS_ENDPOINT_URL_<SERVICE> does for a function's config. Keys are SDK service IDs ("KMS").
type serviceEndpoints map[string]string

// GetServiceBaseEndpoint is what the SDK asks of an aws.Config's ConfigSources.
func (s serviceEndpoints) GetServiceBaseEndpoint(_ context.Context, sdkID string) (string, bool, error) {
	v, ok := s[sdkID]
	return v, ok, nil
}

// kmsAt makes the KMS clients built from cfg reach endpoint (moto).
func kmsAt(cfg *aws.Config, endpoint string) {
	cfg.ConfigSources = append(slices.Clone(cfg.ConfigSources), serviceEndpoints{"KMS": endpoint})
}

// intakeTables are the tables an intake as deployed writes.
type intakeTables struct{ notifications, guard, conversions string }

// deployedIntake builds the admission service the intake function builds (intakewire.Service)
// from template.yaml's environment over names (intakeStandIns), its clients on awsCfg.
func deployedIntake(ctx context.Context, awsCfg aws.Config, names intakeTables, dispatchURL, simURL string, sealing map[string]string) (*notify.Service, error) {
	env, err := templateEnv("IntakeFunction", intakeStandIns(names, dispatchURL, simURL, sealing))
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
func (p *pipeline) workerWiringFor(id string, simURL string, visibility time.Duration, need config.Need) (workercorewire.Wiring, error) {
	local := map[string]string{
		config.EnvNotificationsTable: p.table, config.EnvConversionTable: p.conversions, config.EnvGuardTable: p.guard,
		config.EnvDispatchQueueURL: p.dispatchURL, config.EnvReconcileQueueURL: p.reconcileURL,
		config.EnvSMSProviders: config.SMSSimulator, config.EnvSMSSimulatorURL: simURL,
		config.EnvSMSVisibilitySeconds: strconv.Itoa(int(visibility / time.Second)),
	}
	maps.Copy(local, p.sealing)
	env, err := templateEnv(id, local)
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

// benchCaller returns ctx carrying the local caller's principal, as the intake's HTTP adapter
// sets it from the API's IAM authorizer: Submit refuses a request without one.
func benchCaller(ctx context.Context) (context.Context, error) {
	p, err := notify.CanonicalPrincipal(localapi.Caller(localapi.LocalCallerRole).IAM.UserARN)
	if err != nil {
		return nil, fmt.Errorf("bench: caller: %w", err)
	}
	return notify.WithCaller(ctx, p), nil
}
