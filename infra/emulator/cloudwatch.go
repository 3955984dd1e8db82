package emulator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
)

// CloudWatch is a MiniStack serving CloudWatch and CloudWatch Logs only: make local's metrics
// (infra/local feeds it the functions' EMF lines through infra/emfbridge). moto, the local
// stack's other emulator, cannot: aws-sdk-go-v2's CloudWatch client (and the current AWS CLI)
// speak CloudWatch's rpc-v2-cbor protocol, which moto 5.2 does not. MiniStack is installed
// into .tools/ministack by `make tools`.
type CloudWatch struct {
	// Endpoint is its URL, e.g. http://127.0.0.1:41235 (AWS_ENDPOINT_URL_CLOUDWATCH).
	Endpoint string
	// LogDir holds ministack.log.
	LogDir string

	proc       *process
	removeLogs bool
	stopOnce   sync.Once
	stopErr    error
}

// StartCloudWatch starts it on a free loopback port, with its state in memory, and returns
// once it answers. Of opts it reads ToolsDir, LogDir and ReadyTimeout.
func StartCloudWatch(ctx context.Context, opts Options) (*CloudWatch, error) {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.ToolsDir == "" {
		dir, err := FindToolsDir()
		if err != nil {
			return nil, fmt.Errorf("emulator.cloudwatch: %w", err)
		}
		opts.ToolsDir = dir
	}
	bin := filepath.Join(opts.ToolsDir, "ministack", "bin", "ministack")
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("emulator.cloudwatch: MiniStack not installed at %s: run make tools", bin)
	}
	c := &CloudWatch{LogDir: opts.LogDir}
	if c.LogDir == "" {
		dir, err := os.MkdirTemp("", "resetnotify-cloudwatch-")
		if err != nil {
			return nil, fmt.Errorf("emulator.cloudwatch: log dir: %w", err)
		}
		c.LogDir, c.removeLogs = dir, true
	} else if err := os.MkdirAll(c.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("emulator.cloudwatch: log dir: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("emulator.cloudwatch: %w", err)
	}
	c.Endpoint = fmt.Sprintf("http://127.0.0.1:%d", port)
	// As infra/emulator/emulator.sh starts it: loopback only, one port, in memory, scratch files in
	// LogDir; SERVICES keeps it to CloudWatch (monitoring) and CloudWatch Logs.
	c.proc, err = startProcess("MiniStack (CloudWatch)", filepath.Join(c.LogDir, "ministack.log"), c.LogDir, "env",
		fmt.Sprintf("GATEWAY_PORT=%d", port), "BIND_HOST=127.0.0.1", "SERVICES=monitoring,logs", "IOT_MTLS_ENABLED=0", "SFTP_ENABLED=0",
		"PERSIST_STATE=0", "TMPDIR="+c.LogDir, "STATE_DIR="+filepath.Join(c.LogDir, "state"), "S3_DATA_DIR="+filepath.Join(c.LogDir, "s3"),
		"LOG_LEVEL=WARNING", bin)
	if err != nil {
		c.removeLogs = false
		return nil, fmt.Errorf("emulator.cloudwatch: %w", err)
	}
	client := cloudwatch.NewFromConfig(probeConfig(), func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(c.Endpoint) })
	err = c.proc.waitReady(ctx, opts.ReadyTimeout, func(ctx context.Context) error {
		_, err := client.ListDashboards(ctx, &cloudwatch.ListDashboardsInput{})
		return err
	})
	if err != nil {
		c.removeLogs = false
		_ = c.Stop()
		return nil, fmt.Errorf("emulator.cloudwatch: %w", err)
	}
	return c, nil
}

// Stop stops it as Stack.Stop stops an emulator, and removes the log folder StartCloudWatch
// created. Calling Stop again returns the first call's result.
func (c *CloudWatch) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.proc != nil {
			errs = append(errs, c.proc.stop())
		}
		if c.removeLogs {
			errs = append(errs, os.RemoveAll(c.LogDir))
		}
		if err := errors.Join(errs...); err != nil {
			c.stopErr = fmt.Errorf("emulator.cloudwatch stop: %w", err)
		}
	})
	return c.stopErr
}
