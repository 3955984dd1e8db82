package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigningService is the SigV4 service name of API Gateway's invoke endpoint.
const SigningService = "execute-api"

// Defaults of Options.
const (
	DefaultMaxAttempts = 8
	DefaultTryTimeout  = 10 * time.Second
	DefaultBaseDelay   = 100 * time.Millisecond
	DefaultMaxDelay    = 5 * time.Second
)

// maxResponseBytes bounds what is read of an answer; the API's are a few hundred bytes.
const maxResponseBytes = 1 << 20

// HTTPDoer sends one HTTP request; *http.Client is one.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// Options configures a Client. Only Endpoint is required.
type Options struct {
	// Endpoint is the API's base URL: the stack's ApiUrl output (a custom domain with a base
	// path works too), or http://127.0.0.1:3000 for `make local`.
	Endpoint string
	// Credentials sign every try with SigV4 for execute-api; each try is signed afresh, so
	// credentials that rotate are picked up. Nil sends requests unsigned, which only a local
	// stack accepts.
	Credentials aws.CredentialsProvider
	// Region is the signing region. Empty means the region named in an
	// <id>.execute-api.<region>.amazonaws.com endpoint.
	Region string
	// HTTPClient sends the requests; nil means a new http.Client. Each try is bounded by
	// TryTimeout through its context, so it needs no Timeout of its own.
	HTTPClient HTTPDoer
	// MaxAttempts bounds the tries of one call, the first included (default 8).
	MaxAttempts int
	// TryTimeout bounds one try; a try that times out is repeated (default 10 s).
	TryTimeout time.Duration
	// BaseDelay and MaxDelay shape the backoff before try n: a random duration in
	// [0, min(MaxDelay, BaseDelay·2^(n-2))), and never less than the answer's Retry-After
	// (defaults 100 ms and 5 s).
	BaseDelay, MaxDelay time.Duration
	// UserAgent is sent with every request (default resetnotify-client).
	UserAgent string
}

// Client calls the resetnotify API. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	opts   Options
	http   HTTPDoer
	signer *v4.Signer
	creds  aws.CredentialsProvider
	region string
	jitter func(time.Duration) time.Duration
	sleep  func(context.Context, time.Duration) error
	// now is the clock the retry loop checks the request's notAfter against (time.Now; tests
	// replace it, so that "no try starts after notAfter" is checked without racing a real
	// clock between the check and the try).
	now func() time.Time
}

// executeAPIHost matches API Gateway's default host names and captures the region.
var executeAPIHost = regexp.MustCompile(`^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$`)

// New returns a client for opts.Endpoint.
func New(opts Options) (*Client, error) {
	base, err := url.Parse(strings.TrimRight(opts.Endpoint, "/"))
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, errors.New("client.new: the endpoint must be an http or https URL with a host")
	}
	if base.RawQuery != "" || base.Fragment != "" {
		return nil, errors.New("client.new: the endpoint must have no query or fragment")
	}
	setDefaults(&opts)
	c := &Client{base: base, opts: opts, http: opts.HTTPClient, region: opts.Region, jitter: fullJitter, sleep: sleep, now: time.Now}
	if opts.Credentials != nil {
		c.creds = opts.Credentials
		if _, cached := opts.Credentials.(*aws.CredentialsCache); !cached {
			c.creds = aws.NewCredentialsCache(opts.Credentials)
		}
		c.signer = v4.NewSigner()
		if c.region == "" {
			if m := executeAPIHost.FindStringSubmatch(base.Hostname()); m != nil {
				c.region = m[1]
			}
		}
		if c.region == "" {
			return nil, errors.New("client.new: no signing region: set Options.Region or use an execute-api endpoint")
		}
	}
	return c, nil
}

// NewFromConfig returns a client that signs with cfg's credentials, the caller's own chain
// (environment, shared config and SSO, web identity, container or instance role), and signs
// for the region of an execute-api endpoint, else cfg.Region.
func NewFromConfig(cfg aws.Config, endpoint string, optFns ...func(*Options)) (*Client, error) {
	opts := Options{Endpoint: endpoint, Credentials: cfg.Credentials}
	if u, err := url.Parse(endpoint); err != nil || !executeAPIHost.MatchString(u.Hostname()) {
		opts.Region = cfg.Region
	}
	for _, fn := range optFns {
		fn(&opts)
	}
	return New(opts)
}

func setDefaults(o *Options) {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.TryTimeout <= 0 {
		o.TryTimeout = DefaultTryTimeout
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = DefaultBaseDelay
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxDelay
	}
	if o.UserAgent == "" {
		o.UserAgent = "resetnotify-client"
	}
}

// request is one API call, repeated unchanged by the retry loop.
type request struct {
	op     string // for errors, e.g. "client.send"
	method string
	path   string // escaped, below the endpoint's own path
	header http.Header
	body   []byte
	// notAfter, when set, is a time after which no try starts and no backoff ends.
	notAfter time.Time
}

// response is an answer read in full.
type response struct {
	status int
	header http.Header
	body   []byte
}

// maxReserve bounds the time kept back before a context's deadline; see tryContext.
const maxReserve = 250 * time.Millisecond

// tryContext bounds one try by the try timeout, and ends it a little before ctx's deadline (a
// tenth of the time left, at most maxReserve), so that the call returns by its deadline with
// the last answer rather than just after it.
func (c *Client) tryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.opts.TryTimeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		d = min(d, left-min(left/10, maxReserve))
	}
	return context.WithTimeout(ctx, d)
}

// try sends req once, signed, bounded by tryContext.
func (c *Client) try(ctx context.Context, req request) (*response, error) {
	ctx, cancel := c.tryContext(ctx)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, req.method, c.base.String()+req.path, bytes.NewReader(req.body))
	if err != nil {
		return nil, permanent(fmt.Errorf("build request: %w", err))
	}
	for k, vs := range req.header {
		hr.Header[k] = vs
	}
	hr.Header.Set("User-Agent", c.opts.UserAgent)
	if err := c.sign(ctx, hr, req.body); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		return nil, transportError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, fmt.Errorf("read %d answer: %w", resp.StatusCode, transportError(err))
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: body}, nil
}

// sign signs hr with SigV4 when the client has credentials. A failure to get credentials is
// permanent: repeating the same request cannot fix it.
func (c *Client) sign(ctx context.Context, hr *http.Request, body []byte) error {
	if c.creds == nil {
		return nil
	}
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return permanent(fmt.Errorf("credentials: %w", err))
	}
	sum := sha256.Sum256(body)
	if err := c.signer.SignHTTP(ctx, creds, hr, hex.EncodeToString(sum[:]), SigningService, c.region, time.Now()); err != nil {
		return permanent(fmt.Errorf("sign: %w", err))
	}
	return nil
}

// transportError drops the *url.Error wrapper, which quotes the full URL, keeping its cause.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// permanentError marks a failure that no repeat can fix.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }
