// Package wire is what every function's main shares: a Function names the function, builds
// its handler from the AWS SDK configuration and the environment, and gives the value the
// Lambda runtime takes. Each function is assembled in its own package under wire/ (intake,
// dispatch, reconcile, sweeper, audit, auditreplay, digest, providerevents; workercore for
// what the three workers share), so that a function links only the adapters it uses; each
// builds its function's handler from the package of the same name under shared/ (the layout
// test holds them to it); functions/<name>/main.go is one line, wire.Main(<name>.Function),
// and the local stack (infra/local) calls the same constructors.
//
// Endpoints come from the standard AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE> variables
// (awsclient.FromLambdaEnv): in a local run they point the clients at DynamoDB Local and moto.
package wire

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/obs"
)

// Function is one Lambda function's assembly.
type Function[H any] struct {
	// Name is the folder under functions/, e.g. "provider-events".
	Name string
	// New builds the handler once, at cold start: the settings come through env (os.Getenv in
	// Lambda), logs and metric lines go to out.
	New func(ctx context.Context, awsCfg aws.Config, env func(string) string, out io.Writer) (H, error)
	// Handler returns what lambda.Start takes, e.g. h.Handle.
	Handler func(H) any
}

// Build takes the AWS configuration from the Lambda environment through env (region, the
// execution role's credentials and any AWS_ENDPOINT_URL* variables; see
// awsclient.FromLambdaEnv, which keeps the SDK's default credential chain out of every
// bootstrap) and builds f's handler.
func Build[H any](ctx context.Context, f Function[H], env func(string) string, out io.Writer) (H, error) {
	awsCfg, err := awsclient.FromLambdaEnv(env)
	if err != nil {
		var zero H
		return zero, fmt.Errorf("%s: aws config: %w", f.Name, err)
	}
	return f.New(ctx, awsCfg, env, out)
}

// Main is every function's main: build the handler from the process environment, and hand
// it to the Lambda runtime. A cold start that cannot build its handler logs why and exits 1,
// so that Lambda reports an init error instead of serving with a broken configuration.
func Main[H any](f Function[H]) {
	h, err := Build(context.Background(), f, os.Getenv, os.Stdout)
	if err != nil {
		obs.NewLogger(os.Stderr, slog.LevelError).Error(f.Name+" cold start failed", "error", err)
		os.Exit(1)
	}
	lambda.Start(f.Handler(h))
}
