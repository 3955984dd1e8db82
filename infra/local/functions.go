package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/rie"
	"github.com/resetnotify/resetnotify/infra/samtemplate"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/wire/audit"
	"github.com/resetnotify/resetnotify/shared/wire/auditreplay"
	"github.com/resetnotify/resetnotify/shared/wire/digest"
	"github.com/resetnotify/resetnotify/shared/wire/dispatch"
	"github.com/resetnotify/resetnotify/shared/wire/intake"
	"github.com/resetnotify/resetnotify/shared/wire/providerevents"
	"github.com/resetnotify/resetnotify/shared/wire/reconcile"
	"github.com/resetnotify/resetnotify/shared/wire/sweeper"
	"github.com/resetnotify/resetnotify/shared/workercore"
)

// The two ways the local stack runs a function, chosen with RESETNOTIFY_LOCAL_RUNTIME.
const (
	// runtimeRIE runs each function's real bootstrap (bin/<name>/bootstrap, built by
	// `make build`) under the Lambda Runtime Interface Emulator. The default.
	runtimeRIE = "rie"
	// runtimeInProcess calls the handlers in this process, built by the same wiring as the
	// Lambda mains: quicker to start, and a debugger sees everything.
	runtimeInProcess = "inprocess"
)

// functions are the handlers of template.yaml's functions, whichever runtime runs them.
type functions struct {
	intake    func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	dispatch  workercore.BatchHandler
	reconcile workercore.BatchHandler
	sweeper   func(context.Context, events.EventBridgeEvent) error
	// digest closes each ended audit period with a signed digest, on its schedule.
	digest func(context.Context, events.EventBridgeEvent) error
	audit  streamHandler
	// auditReplay replays the stream batches the audit poller gave up on.
	auditReplay workercore.BatchHandler
	// providerEvents takes the providers' receipts on their webhook routes (the simulator's
	// and Sinch's), choosing by the route.
	providerEvents func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)
	stop           func()
}

// inProcess builds every handler with the constructors the Lambda mains call (packages
// shared/wire/<name>), from this process's environment: the variables template.yaml would
// set and the emulators' endpoints. The audit functions also read the name and version that
// Lambda would set.
func inProcess(ctx context.Context, awsCfg aws.Config, out io.Writer) (functions, error) {
	env := os.Getenv
	in, err := intake.New(ctx, awsCfg, env, out)
	if err != nil {
		return functions{}, err
	}
	au, err := audit.New(ctx, awsCfg, lambdaEnv(env, "AuditFunction"), out)
	if err != nil {
		return functions{}, err
	}
	pe, err := providerevents.New(ctx, awsCfg, env, out)
	if err != nil {
		return functions{}, err
	}
	d, err := dispatch.New(ctx, awsCfg, env, out)
	if err != nil {
		return functions{}, err
	}
	r, err := reconcile.New(ctx, awsCfg, env, out)
	if err != nil {
		return functions{}, err
	}
	sw, err := sweeper.New(ctx, awsCfg, env, out)
	if err != nil {
		return functions{}, err
	}
	dg, err := digest.New(ctx, awsCfg, env, out)
	if err != nil {
		return functions{}, err
	}
	rp, err := auditreplay.New(ctx, awsCfg, lambdaEnv(env, "AuditReplayFunction"), out)
	if err != nil {
		return functions{}, err
	}
	return functions{
		intake: in.Handle, dispatch: d.Handle, reconcile: r.Handle,
		sweeper: sw.Handle, digest: dg.Handle, audit: au.Handle, auditReplay: rp.Handle,
		providerEvents: pe.HandleHTTP,
		stop:           func() {},
	}, nil
}

// lambdaEnv is env with the function name and version Lambda sets ($LATEST) for the function
// with the logical ID name.
func lambdaEnv(env func(string) string, name string) func(string) string {
	return func(k string) string {
		switch k {
		case config.EnvLambdaFunctionName:
			return name
		case config.EnvLambdaFunctionVersion:
			return "$LATEST"
		}
		return env(k)
	}
}

// underRIE starts each function's bootstrap under the Runtime Interface Emulator with this
// process's environment (the variables template.yaml would set, and the emulators'
// endpoints), and returns handlers that invoke them.
func underRIE(ctx context.Context, binDir string, out io.Writer, fns map[string]samtemplate.Function) (functions, error) {
	tools, err := emulator.FindToolsDir()
	if err != nil {
		return functions{}, err
	}
	rieBin := filepath.Join(tools, "bin", "aws-lambda-rie")
	started := map[string]*rie.Function{}
	stop := func() {
		for _, f := range started {
			f.Stop()
		}
	}
	for _, name := range []string{"intake", "dispatch", "reconcile", "sweeper", "audit", "provider-events", "digest", "audit-replay"} {
		fn, ok := fns[name]
		if !ok {
			stop()
			return functions{}, fmt.Errorf("template.yaml has no function for functions/%s", name)
		}
		f, err := rie.Start(ctx, rie.Options{
			RIE: rieBin, Bootstrap: filepath.Join(binDir, name, "bootstrap"), Name: "resetnotify-" + name,
			Env: os.Environ(), Timeout: fn.Timeout, MemoryMB: fn.MemoryMB, Output: out,
		})
		if err != nil {
			stop()
			return functions{}, fmt.Errorf("%w; or set RESETNOTIFY_LOCAL_RUNTIME=%s", err, runtimeInProcess)
		}
		started[name] = f
	}
	return functions{
		intake:    invoke[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse](started["intake"]),
		dispatch:  invoke[events.SQSEvent, events.SQSEventResponse](started["dispatch"]),
		reconcile: invoke[events.SQSEvent, events.SQSEventResponse](started["reconcile"]),
		sweeper: func(ctx context.Context, ev events.EventBridgeEvent) error {
			return started["sweeper"].Invoke(ctx, ev, nil)
		},
		digest: func(ctx context.Context, ev events.EventBridgeEvent) error {
			return started["digest"].Invoke(ctx, ev, nil)
		},
		audit:          invoke[events.DynamoDBEvent, events.DynamoDBEventResponse](started["audit"]),
		auditReplay:    invoke[events.SQSEvent, events.SQSEventResponse](started["audit-replay"]),
		providerEvents: invoke[events.APIGatewayV2HTTPRequest, events.APIGatewayV2HTTPResponse](started["provider-events"]),
		stop:           stop,
	}, nil
}

// invoke adapts a function under the emulator to a typed handler.
func invoke[In, Out any](f *rie.Function) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		var out Out
		err := f.Invoke(ctx, in, &out)
		return out, err
	}
}
