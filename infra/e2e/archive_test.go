package e2e_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// TestUpgradeSeedsEntriesOfThePreviousVersion is the first half of the upgrade test
// (upgrade_test.go): the package's first test, it writes entries as the previous version did
// into the digest period open now; TestUpgradeArchivesThenTTLTakes, the last, checks them.
func TestUpgradeSeedsEntriesOfThePreviousVersion(t *testing.T) {
	seedPreviousVersion(t, getStack(t))
}

// manifestURL finds the manifest address auditctl archive status prints for a period.
var manifestURL = regexp.MustCompile(`s3://([a-z0-9.-]+)/(audit/\S+/manifest\.json)`)

// TestArchiveOfClosedPeriods takes one notification to delivered and waits for the digest
// function to archive a closed period into the stack's archive bucket (auditctl archive
// status), then tries to delete an archived object's version and to shorten its retention:
// Object Lock in compliance mode refuses the delete. An emulator that does not enforce the
// retention change is reported, not failed: the bucket policy's deny is held by
// infra/policycheck. It needs periods of a few minutes at most (the local stack's, or
// AuditDigestPeriodMinutes=1); with hour-long periods it skips.
func TestArchiveOfClosedPeriods(t *testing.T) {
	s := getStack(t)
	n := s.newNotification(t, "archived", number(t), 10*time.Minute)
	if r := s.submit(t, n); r.Code != http.StatusAccepted {
		t.Fatalf("POST: %d %s", r.Code, r.Body)
	}
	s.waitState(t, n.key(), settle, "delivered")
	s.audited(t, n.EventID, "(RECEIPT_DELIVERED)")
	var status string
	var m []string
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Second) {
		out, err := s.auditctl(t, "archive", "status")
		if err != nil {
			t.Fatalf("auditctl archive status: %v\n%s", err, out)
		}
		status = out
		// The newest archived period: stackcheck may have locked an emulator's bucket after
		// the first periods were archived.
		if all := manifestURL.FindAllStringSubmatch(out, -1); len(all) > 0 {
			m = all[len(all)-1]
			break
		}
	}
	if m == nil {
		if strings.HasPrefix(status, "0 periods archived, 0 periods pending") {
			t.Skipf("no period archived within 5 minutes (hour-long digest periods?):\n%s", status)
		}
		t.Fatalf("no archived period in:\n%s", status)
	}
	bucket, key := m[1], m[2]
	ctx := context.Background()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("head s3://%s/%s: %v", bucket, key, err)
	}
	if head.ObjectLockMode == "" {
		// MiniStack's S3 has Object Lock, but its CloudFormation creates the bucket without
		// the template's ObjectLockConfiguration: nothing to refuse with. The bucket policy's
		// denies are held by infra/policycheck; make local and shared/archive test the lock.
		lock, lerr := client.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(bucket)})
		if lerr != nil || lock.ObjectLockConfiguration == nil || lock.ObjectLockConfiguration.Rule == nil {
			t.Skipf("s3://%s was created without Object Lock by this emulator's CloudFormation (template.yaml asks for compliance mode): archived, but no lock to test (%v)", bucket, lerr)
		}
	}
	if head.ObjectLockMode != s3types.ObjectLockModeCompliance {
		t.Errorf("s3://%s/%s is locked in mode %q, want COMPLIANCE", bucket, key, head.ObjectLockMode)
	}
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: head.VersionId}); err == nil {
		t.Errorf("deleting the archived version of s3://%s/%s was not refused", bucket, key)
	} else {
		t.Logf("delete refused: %v", err)
	}
	_, err = client.PutObjectRetention(ctx, &s3.PutObjectRetentionInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: head.VersionId,
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256,
		Retention:         &s3types.ObjectLockRetention{Mode: s3types.ObjectLockRetentionModeCompliance, RetainUntilDate: aws.Time(time.Now().Add(24 * time.Hour))}})
	if err == nil {
		t.Logf("this emulator let the retention be shortened (AWS refuses it in compliance mode; the bucket policy denies s3:PutObjectRetention, see infra/policycheck)")
	} else {
		t.Logf("shortening the retention refused: %v", err)
	}
}
