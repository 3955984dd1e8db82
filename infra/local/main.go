// Command local runs the whole of resetnotify on one machine: `make local` starts it.
//
// It starts DynamoDB Local and moto_server (SQS) on free loopback ports, creates the tables and
// queues, and runs each function's real handler, built by the same wiring (package
// shared/wire/<name>) as its Lambda main, behind the event sources template.yaml declares:
// the API's routes are served on http://127.0.0.1:$RESETNOTIFY_PORT (default 3000) as API
// Gateway HTTP API v2 events, and
// the notifications table's stream is polled and handed to the audit function in batches, as
// an event source mapping would. Local authorisation is off: there is no SigV4 check.
//
// What the functions write as EMF becomes CloudWatch metrics in a MiniStack serving CloudWatch
// (AWS_ENDPOINT_URL_CLOUDWATCH, printed with the other exports): see metrics.go.
//
// Functions run as their real bootstrap binaries (bin/<name>/bootstrap from `make build`, or
// $RESETNOTIFY_BIN_DIR) under the Lambda Runtime Interface Emulator, one emulator process per
// function; RESETNOTIFY_LOCAL_RUNTIME=inprocess calls the same handlers in this process
// instead. The SMS providers are three in-process simulators, the chain
// simulator,simulator2,twilio (RESETNOTIFY_SIM_MIX and RESETNOTIFY_SIM_RULES set the first
// one's faults; the third speaks Twilio's API, its status callbacks signed with a random auth
// token per run, in the file the `twilio simulator:` line names), and their receipts go to the
// provider-events routes. The stack sends to the first one's send port,
// which POST /control/connections on its printed address closes (every connection refused)
// and reopens. The Sinch webhook route is served too, with a random token per run in the
// file the `sinch webhook:` line names, so that a test can post Sinch's delivery reports.
//
// The digest step closes each one-minute audit period with a digest signed by a local ECDSA
// key, random per run, whose public half is written to a temporary file
// ($AUDIT_DIGEST_PUBLIC_KEY).
//
// It prints the `export ...` lines that point the AWS CLI and auditctl at the local stack,
// then `ready: <base URL>` once requests are accepted. SIGINT or SIGTERM stops every process
// it started. Secrets for sealing and the destination pepper are random per run: the tables
// are in memory and do not outlive the run either.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/resetnotify/resetnotify/infra/emulator"
	"github.com/resetnotify/resetnotify/infra/localapi"
	"github.com/resetnotify/resetnotify/infra/smssim"
	"github.com/resetnotify/resetnotify/infra/tablesetup"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/s3client"
	"github.com/resetnotify/resetnotify/shared/adapters/awsclient/streamsclient"
	"github.com/resetnotify/resetnotify/shared/auditreplay"
	"github.com/resetnotify/resetnotify/shared/config"
	"github.com/resetnotify/resetnotify/shared/digest"
	"github.com/resetnotify/resetnotify/shared/obs"
	"github.com/resetnotify/resetnotify/shared/tables"
)

// The physical names of the local resources.
const (
	notificationsTable = "resetnotify-notifications"
	auditTable         = "resetnotify-audit"
	receiptsTable      = "resetnotify-receipts"
	guardTable         = "resetnotify-guard"
	conversionTable    = "resetnotify-conversion"
	sealKeysTable      = "resetnotify-seal-keys"
	defaultPort        = "3000"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "local:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, stdout, stderr io.Writer) error {
	port := os.Getenv("RESETNOTIFY_PORT")
	if port == "" {
		port = defaultPort
	}
	// Take the port first: failing after a 5-second emulator start is a poor way to learn
	// that another run is still up.
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return fmt.Errorf("listen on 127.0.0.1:%s (set RESETNOTIFY_PORT to use another port): %w", port, err)
	}
	defer ln.Close()

	st, err := loadSettings("template.yaml", "Makefile")
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "local: starting DynamoDB Local and moto_server ...")
	stack, err := emulator.Start(ctx, emulator.Options{})
	if err != nil {
		return err
	}
	defer func() {
		if err := stack.Stop(); err != nil {
			fmt.Fprintln(stderr, "local: stop emulators:", err)
		}
	}()
	keyDir, err := os.MkdirTemp("", "resetnotify-local-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(keyDir)
	l, err := provision(ctx, stack, keyDir, port, st)
	if err != nil {
		return err
	}
	defer l.sim.Close()
	defer l.sim2.Close()
	defer l.twilio.Close()
	fmt.Fprintln(stderr, "local: starting MiniStack's CloudWatch for the functions' metrics ...")
	mt, err := startMetrics(ctx, l.awsCfg, stderr)
	if err != nil {
		return err
	}
	defer mt.stop(stderr)
	l.cloudWatch = mt.cw.Endpoint
	fns, err := startFunctions(ctx, l.awsCfg, mt.output(stderr), st)
	if err != nil {
		return err
	}
	defer fns.stop()
	return serve(ctx, ln, stdout, stderr, l, st, fns)
}

// local is what provision sets up: the SDK configuration that reaches the emulators, the
// queues and the simulator.
type local struct {
	stack  *emulator.Stack
	awsCfg aws.Config
	queues queueURLs
	sim    *smssim.Server
	// sim2 is the second simulated provider of the chain.
	sim2 *smssim.Server
	port string
	// sinchTokenFile holds the Sinch webhook's token (SINCH_CALLBACK_TOKEN).
	sinchTokenFile string
	// twilio is the third provider of the chain, the simulator in its Twilio mode;
	// twilioTokenFile holds its auth token (TWILIO_AUTH_TOKEN).
	twilio          *smssim.Server
	twilioTokenFile string
	// cloudWatch is the endpoint of the functions' metrics (metrics.go).
	cloudWatch string
}

// provision sets this process's environment as template.yaml would set the functions' (the
// emulators' endpoints, the tables, the queues, random secrets, the simulator), and creates
// the tables and queues.
func provision(ctx context.Context, stack *emulator.Stack, keyDir, port string, st settings) (local, error) {
	l := local{stack: stack, port: port, sinchTokenFile: filepath.Join(keyDir, sinchTokenFile), twilioTokenFile: filepath.Join(keyDir, twilioTokenFile)}
	env, err := environment(stack, keyDir, st)
	if err != nil {
		return local{}, err
	}
	if err := setenv(env); err != nil {
		return local{}, err
	}
	if l.awsCfg, err = awsconfig.LoadDefaultConfig(ctx); err != nil {
		return local{}, fmt.Errorf("aws config: %w", err)
	}
	db := awsclient.DynamoDB(l.awsCfg, "")
	if err := tablesetup.Create(ctx, db, tables.Names{Notifications: notificationsTable, Audit: auditTable, Receipts: receiptsTable, Guard: guardTable,
		Conversions: conversionTable, SealKeys: sealKeysTable}); err != nil {
		return local{}, err
	}
	if err := sealingKey(ctx, kms.NewFromConfig(l.awsCfg)); err != nil {
		return local{}, err
	}
	if err := createArchiveBucket(ctx, s3client.New(l.awsCfg, ""), st.retentionDays); err != nil {
		return local{}, err
	}
	if l.queues, err = createQueues(ctx, awsclient.SQS(l.awsCfg, ""), st.queues); err != nil {
		return local{}, err
	}
	if err := setenv(l.queues.env()); err != nil {
		return local{}, err
	}
	if err := l.startSimulators(env[config.EnvSimulatorWebhookToken], env[config.EnvTwilioAccountSID], env[config.EnvTwilioAuthToken], env[config.EnvTwilioAPIKey]); err != nil {
		return local{}, err
	}
	return l, nil
}

// startSimulators starts the three simulated providers of the local chain: simulator and
// simulator2 (the second-provider mode), both posting receipts to the simulator webhook
// route, and twilio (the Twilio mode), whose signed status callbacks go to each message's
// StatusCallback URL, the Twilio route; and sets the providers' variables.
func (l *local) startSimulators(webhookToken, twilioAccount, twilioToken, twilioKey string) error {
	webhook := "http://127.0.0.1:" + l.port + "/v1/provider-events/simulator"
	var err error
	if l.sim, err = startSimulator(webhook, webhookToken, config.SMSSimulator); err != nil {
		return err
	}
	if l.sim2, err = startSimulator(webhook, webhookToken, config.SMSSimulator2); err != nil {
		l.sim.Close()
		return err
	}
	if l.twilio, err = startTwilioSimulator(twilioAccount, twilioToken, twilioKey); err != nil {
		l.sim.Close()
		l.sim2.Close()
		return err
	}
	err = setenv(map[string]string{
		config.EnvSMSProviders:      config.SMSSimulator + "," + config.SMSSimulator2 + "," + config.SMSTwilio,
		config.EnvSMSSimulatorURL:   l.sim.SendURL(),
		config.EnvSMSSimulator2URL:  l.sim2.URL(),
		config.EnvTwilioBaseURL:     l.twilio.URL(),
		config.EnvTwilioCallbackURL: "http://127.0.0.1:" + l.port + "/v1/provider-events/twilio",
	})
	if err != nil {
		l.sim.Close()
		l.sim2.Close()
		l.twilio.Close()
	}
	return err
}

// setenv sets every variable of env in this process.
func setenv(env map[string]string) error {
	for k, v := range env {
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("setenv %s: %w", k, err)
		}
	}
	return nil
}

// startFunctions builds the functions' handlers with the runtime RESETNOTIFY_LOCAL_RUNTIME
// names.
func startFunctions(ctx context.Context, awsCfg aws.Config, stderr io.Writer, st settings) (functions, error) {
	switch mode := os.Getenv("RESETNOTIFY_LOCAL_RUNTIME"); mode {
	case "", runtimeRIE:
		binDir := os.Getenv("RESETNOTIFY_BIN_DIR")
		if binDir == "" {
			binDir = "bin"
		}
		return underRIE(ctx, binDir, stderr, st.functions)
	case runtimeInProcess:
		return inProcess(ctx, awsCfg, stderr)
	default:
		return functions{}, fmt.Errorf("RESETNOTIFY_LOCAL_RUNTIME=%q: want %s or %s", mode, runtimeRIE, runtimeInProcess)
	}
}

// serve runs the event sources (the stream poller, the queue pumps, the schedules) and the
// API on ln until ctx ends or one of them fails.
func serve(ctx context.Context, ln net.Listener, stdout, stderr io.Writer, l local, st settings, fns functions) error {
	routes, err := localapi.RoutesFromTemplate("template.yaml")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 8)
	runSources(ctx, l, st, fns, obs.NewLogger(stderr, slog.LevelInfo), errs)
	srv := &http.Server{
		Handler: localapi.NewServer(routes, map[string]localapi.HandlerFunc{
			// The providers' webhook routes belong to SimulatorWebhookFunction and
			// SinchWebhookFunction, which run provider-events' code (template.yaml): here one
			// handler serves both, choosing by the route.
			"IntakeFunction": fns.intake, "SimulatorWebhookFunction": fns.providerEvents, "SinchWebhookFunction": fns.providerEvents,
			"TwilioWebhookFunction": fns.providerEvents,
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("http server: %w", err)
		}
	}()

	printExports(stdout, l.stack, l.queues)
	fmt.Fprintf(stdout, "export AWS_ENDPOINT_URL_CLOUDWATCH=%s\n", l.cloudWatch)
	fmt.Fprintf(stdout, "sms simulator: %s (GET /inbox, POST /control/faults, POST /control/connections; the stack sends to %s)\n", l.sim.URL(), l.sim.SendURL())
	fmt.Fprintf(stdout, "sms simulator2: %s (the second provider of the chain)\n", l.sim2.URL())
	fmt.Fprintf(stdout, "sinch webhook: http://127.0.0.1:%s/v1/provider-events/sinch (its token in %s)\n", l.port, l.sinchTokenFile)
	fmt.Fprintf(stdout, "twilio simulator: %s (the third provider of the chain; its auth token in %s)\n", l.twilio.URL(), l.twilioTokenFile)
	fmt.Fprintf(stdout, "twilio webhook: http://127.0.0.1:%s/v1/provider-events/twilio\n", l.port)
	fmt.Fprintf(stdout, "callers: every request comes from role %s; the header %s: <role name> makes it another caller's (local only)\n",
		localapi.LocalCallerRole, localapi.CallerHeader)
	fmt.Fprintf(stdout, "ready: http://127.0.0.1:%s\n", l.port)

	var runErr error
	select {
	case <-ctx.Done():
		fmt.Fprintln(stderr, "local: stopping")
	case runErr = <-errs:
		if runErr == nil && ctx.Err() == nil {
			runErr = errors.New("a background worker stopped")
		}
	}
	cancel()
	shutdownCtx, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	_ = srv.Shutdown(shutdownCtx)
	return runErr
}

// runSources starts, as template.yaml's event sources would, the notifications stream's
// poller (its failures go to the audit failure queue), the queue pumps and the schedules;
// each reports on errs when it stops.
func runSources(ctx context.Context, l local, st settings, fns functions, log *slog.Logger, errs chan<- error) {
	sqsClient := awsclient.SQS(l.awsCfg, "")
	onFailure := func(ctx context.Context, fr auditreplay.FailureRecord) error {
		body, err := json.Marshal(fr)
		if err != nil {
			return err
		}
		_, err = sqsClient.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.queues.AuditFailure), MessageBody: aws.String(string(body))})
		return err
	}
	db := awsclient.DynamoDB(l.awsCfg, "")
	go func() {
		errs <- pollStream(ctx, streamsclient.New(l.awsCfg, ""), db, notificationsTable, st.audit, fns.audit, onFailure, log)
	}()
	go func() { errs <- pumpQueue(ctx, sqsClient, l.queues.AuditFailure, st.auditReplay, fns.auditReplay, log) }()
	go func() { errs <- pumpQueue(ctx, sqsClient, l.queues.Dispatch, st.dispatch, fns.dispatch, log) }()
	go func() { errs <- pumpQueue(ctx, sqsClient, l.queues.Reconcile, st.reconcile, fns.reconcile, log) }()
	go func() { errs <- runSchedule(ctx, st.sweep, fns.sweeper, log) }()
	go func() { errs <- runSchedule(ctx, st.digest, fns.digest, log) }()
}

// sinchTokenFile is the name, in the run's key directory, of the file holding the Sinch
// webhook's token.
const sinchTokenFile = "sinch-callback-token"

// twilioTokenFile is the name, in the run's key directory, of the file holding the Twilio
// simulator's auth token, with which a test signs (or forges) status callbacks.
const twilioTokenFile = "twilio-auth-token"

// The local digest settings: one-minute periods, closed 10 s after they end (the local audit
// poller writes within milliseconds; AWS needs more than the audit function's timeout).
const (
	localDigestPeriodMinutes = "1"
	localDigestGraceSeconds  = "10"
)

// environment returns the variables the functions read, as template.yaml would set them, plus
// the emulators' endpoints and local credentials. The digest signing key is random per run;
// its public half is written to keyDir for auditctl. It is long because it is one flat list of
// settings, one group per provider and store, which reads best in one place.
//
//revive:disable-next-line:function-length
func environment(stack *emulator.Stack, keyDir string, st settings) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range stack.Environ(nil) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	pepper := make([]byte, 24)
	token := make([]byte, 24)
	sinchToken := make([]byte, 24)
	fingerprintKey := make([]byte, 32)
	for _, b := range [][]byte{fingerprintKey, pepper, token, sinchToken} {
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
	}
	set := func(k, v string) {
		if os.Getenv(k) == "" {
			env[k] = v
		}
	}
	set(config.EnvNotificationsTable, notificationsTable)
	set(config.EnvAuditTable, auditTable)
	set(config.EnvPolicyVersion, "local-1")
	set(config.EnvLogLevel, "info")
	set(config.EnvReceiptsTable, receiptsTable)
	set(config.EnvGuardTable, guardTable)
	set(config.EnvAllowedCountries, st.allowedCountries)
	set(config.EnvConversionTable, conversionTable)
	set(config.EnvAuditArchiveBucket, archiveBucket)
	set(config.EnvAuditHotDays, st.hotDays)
	env[config.EnvSimulatorWebhookToken] = base64.RawStdEncoding.EncodeToString(token)
	// A test stands in for Sinch with it: in a file only this user reads, never printed.
	env[config.EnvSinchCallbackToken] = base64.RawURLEncoding.EncodeToString(sinchToken)
	tokenFile := filepath.Join(keyDir, sinchTokenFile)
	if err := os.WriteFile(tokenFile, []byte(env[config.EnvSinchCallbackToken]), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", tokenFile, err)
	}
	if err := twilioEnv(env, keyDir); err != nil {
		return nil, err
	}
	env[config.EnvDestinationPepper] = base64.RawStdEncoding.EncodeToString(pepper)
	digestKey, digestPEM, err := digest.NewLocalKey()
	if err != nil {
		return nil, err
	}
	pub, err := digest.PublicKeyPEM(&digestKey.PublicKey)
	if err != nil {
		return nil, err
	}
	pubFile := filepath.Join(keyDir, "digest-public.pem")
	if err := os.WriteFile(pubFile, pub, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", pubFile, err)
	}
	env[config.EnvAuditDigestLocalKey] = string(digestPEM)
	env[config.EnvAuditDigestPublicKey] = pubFile
	set(config.EnvAuditDigestPeriodMinutes, localDigestPeriodMinutes)
	set(config.EnvAuditDigestGraceSeconds, localDigestGraceSeconds)
	env[config.EnvFingerprintKey] = base64.RawStdEncoding.EncodeToString(fingerprintKey)
	return env, nil
}

// sealingKey makes the local stack seal as a deploy does: a KMS key in moto's KMS
// (SEAL_KMS_KEY_ID) and the seal-keys table (SEAL_KEYS_TABLE), so that records hold a 16-byte
// data key ID and the table the encrypted data keys. SEAL_LOCAL_KEY, the static key, is for
// tests that build a function without moto.
func sealingKey(ctx context.Context, client *kms.Client) error {
	out, err := client.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("resetnotify local sealing key")})
	if err != nil {
		return fmt.Errorf("sealing key in moto's KMS: %w", err)
	}
	return setenv(map[string]string{config.EnvSealKMSKeyID: aws.ToString(out.KeyMetadata.Arn), config.EnvSealKeysTable: sealKeysTable})
}

// twilioEnv sets the Twilio simulator's account, auth token and API key in env, random and as
// Twilio's look (token and key secret 32 hexadecimal characters; dispatch and reconcile get
// the key only, TWILIO_API_KEY, unless already set), and writes the token to a file of keyDir only
// this user reads, never printed: a test signs (or forges) status callbacks with it. Unless
// set, the chain's visibility window stays the simulators' (0): Twilio's default (60 s) would
// only slow the local runs down, since no Twilio answer ever counts as "not found".
func twilioEnv(env map[string]string, keyDir string) error {
	account, token, keySID, keySecret := make([]byte, 16), make([]byte, 16), make([]byte, 16), make([]byte, 16)
	for _, b := range [][]byte{account, token, keySID, keySecret} {
		if _, err := rand.Read(b); err != nil {
			return err
		}
	}
	if os.Getenv(config.EnvSMSVisibilitySeconds) == "" {
		env[config.EnvSMSVisibilitySeconds] = "0"
	}
	env[config.EnvTwilioAccountSID] = "AC" + hex.EncodeToString(account)
	env[config.EnvTwilioAuthToken] = hex.EncodeToString(token)
	env[config.EnvTwilioAPIKey] = "SK" + hex.EncodeToString(keySID) + ":" + hex.EncodeToString(keySecret)
	if key := os.Getenv(config.EnvTwilioAPIKey); key != "" {
		env[config.EnvTwilioAPIKey] = key
	}
	env[config.EnvTwilioFrom] = "+15005550006"
	file := filepath.Join(keyDir, twilioTokenFile)
	if err := os.WriteFile(file, []byte(env[config.EnvTwilioAuthToken]), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// printExports prints the shell lines that point the AWS CLI, the SDKs and auditctl at the
// local stack. They hold no secret.
func printExports(w io.Writer, stack *emulator.Stack, q queueURLs) {
	fmt.Fprintf(w, "export AWS_ENDPOINT_URL_DYNAMODB=%s\n", stack.DynamoDBEndpoint)
	fmt.Fprintf(w, "export AWS_ENDPOINT_URL_DYNAMODB_STREAMS=%s\n", stack.DynamoDBEndpoint)
	fmt.Fprintf(w, "export AWS_ENDPOINT_URL_SQS=%s\n", stack.SQSEndpoint)
	fmt.Fprintf(w, "export AWS_REGION=%s AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local\n", emulator.Region)
	fmt.Fprintf(w, "export %s=%s %s=%s\n", config.EnvNotificationsTable, notificationsTable, config.EnvAuditTable, auditTable)
	fmt.Fprintf(w, "export %s=%s\n", config.EnvDispatchQueueURL, q.Dispatch)
	fmt.Fprintf(w, "export %s=%s\n", config.EnvReceiptsTable, receiptsTable)
	fmt.Fprintf(w, "export %s=%s %s=%s %s=%s\n", config.EnvAuditDigestPublicKey, os.Getenv(config.EnvAuditDigestPublicKey),
		config.EnvAuditDigestPeriodMinutes, os.Getenv(config.EnvAuditDigestPeriodMinutes), config.EnvAuditDigestGraceSeconds, os.Getenv(config.EnvAuditDigestGraceSeconds))
	fmt.Fprintf(w, "export %s=%s\n", config.EnvGuardTable, guardTable)
	fmt.Fprintf(w, "export %s=%s\n", config.EnvConversionTable, conversionTable)
	fmt.Fprintf(w, "export AWS_ENDPOINT_URL_S3=%s %s=%s\n", stack.SQSEndpoint, config.EnvAuditHotDays, os.Getenv(config.EnvAuditHotDays))
}

// archiveBucket is the local audit archive, on moto's S3.
const archiveBucket = "resetnotify-audit-archive"

// createArchiveBucket creates the archive bucket as template.yaml's AuditArchiveBucket: Object
// Lock in compliance mode with a default retention of days (AuditRetentionDays). One that
// exists already is kept (its objects are locked).
func createArchiveBucket(ctx context.Context, client *s3.Client, days string) error {
	n, err := strconv.Atoi(days)
	if err != nil {
		return fmt.Errorf("archive bucket: AuditRetentionDays %q: %w", days, err)
	}
	_, err = client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(archiveBucket), ObjectLockEnabledForBucket: aws.Bool(true)})
	var owned *s3types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("archive bucket: %w", err)
	}
	_, err = client.PutObjectLockConfiguration(ctx, &s3.PutObjectLockConfigurationInput{Bucket: aws.String(archiveBucket),
		ObjectLockConfiguration: &s3types.ObjectLockConfiguration{ObjectLockEnabled: s3types.ObjectLockEnabledEnabled,
			Rule: &s3types.ObjectLockRule{DefaultRetention: &s3types.DefaultRetention{Mode: s3types.ObjectLockRetentionModeCompliance, Days: aws.Int32(int32(n))}}}})
	if err != nil {
		return fmt.Errorf("archive bucket: %w", err)
	}
	return nil
}
