package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAnotherStackCannotReplaceTheArchivePolicy: a principal other than DeploymentRoleArn (the
// second caller's role) deploys a one-resource stack that replaces the archive bucket's policy.
// CloudFormation acts with its caller's credentials, so the policy's TheProtectionsStay refuses
// it: the stack fails and the policy is unchanged. The same stack on a bucket without such a
// policy succeeds, so the refusal is the archive policy's. It needs the stack's CloudFormation
// (make emulator-e2e: RESETNOTIFY_E2E_STACK) and a second STS identity; the emulator's
// CloudFormation checks bucket policies through infra/emulator/ministack_platform.py.
func TestAnotherStackCannotReplaceTheArchivePolicy(t *testing.T) {
	s := getStack(t)
	name := os.Getenv("RESETNOTIFY_E2E_STACK")
	if name == "" || os.Getenv(envSecondCallerRole) == "" {
		t.Skip("no CloudFormation stack to attack (RESETNOTIFY_E2E_STACK and RESETNOTIFY_E2E_SECOND_CALLER_ROLE are set by make emulator-e2e only)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cloudformation.NewFromConfig(cfg).DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{
		StackName: aws.String(name), LogicalResourceId: aws.String("AuditArchiveBucket")})
	if err != nil {
		t.Fatal(err)
	}
	archive := aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	before := bucketPolicy(ctx, t, s3c, archive)
	if !strings.Contains(before, "TheProtectionsStay") {
		t.Fatalf("s3://%s has no TheProtectionsStay statement: %s", archive, before)
	}

	intruder := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.Credentials = s.secondCaller(t).creds })
	status, reason := deployPolicyStack(ctx, t, intruder, "resetnotify-e2e-policy-"+s.runID, archive)
	if !strings.Contains(status, "FAILED") && !strings.HasPrefix(status, "ROLLBACK") {
		t.Errorf("a stack of another principal replacing the archive's policy ended %s, want it refused", status)
	}
	if !strings.Contains(reason, "s3:PutBucketPolicy") {
		t.Errorf("the refusal does not name s3:PutBucketPolicy: %q", reason)
	}
	if after := bucketPolicy(ctx, t, s3c, archive); after != before {
		t.Errorf("the archive's policy changed:\n%s\nwas\n%s", after, before)
	}

	// The control: the same stack, by the same principal, on a bucket of no such policy.
	scratch := "resetnotify-e2e-scratch-" + s.runID
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(scratch)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = s3c.DeleteBucketPolicy(context.Background(), &s3.DeleteBucketPolicyInput{Bucket: aws.String(scratch)})
		_, _ = s3c.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(scratch)})
	})
	if status, reason := deployPolicyStack(ctx, t, intruder, "resetnotify-e2e-scratch-"+s.runID, scratch); status != "CREATE_COMPLETE" {
		t.Errorf("the same stack on a bucket without a protective policy ended %s (%s), want CREATE_COMPLETE", status, reason)
	}
}

// bucketPolicy returns bucket's policy document, compacted.
func bucketPolicy(ctx context.Context, t *testing.T, c *s3.Client, bucket string) string {
	t.Helper()
	out, err := c.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatalf("get the policy of s3://%s: %v", bucket, err)
	}
	var doc any
	if err := json.Unmarshal([]byte(aws.ToString(out.Policy)), &doc); err != nil {
		t.Fatalf("the policy of s3://%s: %v", bucket, err)
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// deployPolicyStack creates stack, one AWS::S3::BucketPolicy that lets anyone read bucket's
// objects, through client, and returns its final status and the first failure's reason.
func deployPolicyStack(ctx context.Context, t *testing.T, client *cloudformation.Client, stack, bucket string) (string, string) {
	t.Helper()
	tpl, err := json.Marshal(map[string]any{"Resources": map[string]any{"Policy": map[string]any{
		"Type": "AWS::S3::BucketPolicy",
		"Properties": map[string]any{"Bucket": bucket, "PolicyDocument": map[string]any{
			"Version": "2012-10-17",
			"Statement": []any{map[string]any{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
				"Resource": "arn:aws:s3:::" + bucket + "/*"}},
		}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(string(tpl))}); err != nil {
		t.Fatalf("create stack %s: %v", stack, err)
	}
	for ctx.Err() == nil {
		out, err := client.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
		if err != nil {
			t.Fatalf("describe stack %s: %v", stack, err)
		}
		if status := string(out.Stacks[0].StackStatus); !strings.HasSuffix(status, "_IN_PROGRESS") {
			return status, failureReason(ctx, client, stack)
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("stack %s still in progress", stack)
	return "", ""
}

// failureReason returns the reason of stack's first failed resource event, or "".
func failureReason(ctx context.Context, client *cloudformation.Client, stack string) string {
	out, err := client.DescribeStackEvents(ctx, &cloudformation.DescribeStackEventsInput{StackName: aws.String(stack)})
	if err != nil {
		return "describe events: " + err.Error()
	}
	for _, e := range out.StackEvents {
		if strings.HasSuffix(string(e.ResourceStatus), "_FAILED") && aws.ToString(e.LogicalResourceId) == "Policy" {
			return aws.ToString(e.ResourceStatusReason)
		}
	}
	return ""
}
