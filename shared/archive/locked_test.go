package archive_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/resetnotify/resetnotify/auditor"
	"github.com/resetnotify/resetnotify/infra/audittest"
	"github.com/resetnotify/resetnotify/infra/testenv"
	"github.com/resetnotify/resetnotify/shared/archive"
	"github.com/resetnotify/resetnotify/shared/notify/notifytest"
)

// TestArchiveIntoAnObjectLockBucket runs the archive step against moto's S3, into a bucket
// with Object Lock in compliance mode as the template makes it: every object is locked by the
// bucket's default retention, a locked version cannot be deleted, and once the hot window has
// taken the entries from the table, the auditor verifies the periods from the bucket.
// A forged version put over an archived part is never read: the auditor reads the version
// the archive item records. (moto does not refuse shortening a compliance retention, which S3
// does, nor evaluate bucket policies; the policy's denies are held by infra/policycheck.)
func TestArchiveIntoAnObjectLockBucket(t *testing.T) {
	env := audittest.NewEnv(t)
	client := testenv.S3(t)
	ctx := context.Background()
	name := strings.Trim(strings.ToLower(strings.ReplaceAll(testenv.UniqueName(t, "archive"), "_", "-")), "-")
	if len(name) > 63 {
		name = name[len(name)-63:]
	}
	bucket := testenv.LockedBucket(t, client, name, 400)
	p := audittest.DigestPeriod
	base := audittest.WriteStart.Truncate(p)
	ds := periods(t, env, base, 120, 2, false)
	a := env.Archiver(client, notifytest.NewClock(base.Add(2*p+audittest.DigestGrace)), hot)
	a.Bucket = bucket
	items, err := a.Run(ctx)
	if err != nil || len(items) != 2 {
		t.Fatalf("archive into moto: %d periods, %v", len(items), err)
	}
	key := archive.PartKey(ds[0].PeriodStart, 0)
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	if head.ObjectLockMode != s3types.ObjectLockModeCompliance || head.ObjectLockRetainUntilDate == nil ||
		head.ObjectLockRetainUntilDate.Before(time.Now().Add(399*24*time.Hour)) {
		t.Errorf("archived object's lock: %s until %v, want COMPLIANCE for 400 days", head.ObjectLockMode, head.ObjectLockRetainUntilDate)
	}
	if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: head.VersionId}); err == nil {
		t.Error("deleting a locked archive object's version was not refused")
	}

	// Write-once: the item records the version the put returned; moto refuses a second put
	// with If-None-Match: *; a forged version put without it (the bucket policy refuses that
	// in AWS; moto evaluates no policy) becomes the latest, and the auditor, which reads the
	// recorded version, never sees it.
	if v := items[0].Versions[key]; v == "" || v != aws.ToString(head.VersionId) {
		t.Errorf("archive item records version %q of %s, S3 holds %q", v, key, aws.ToString(head.VersionId))
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("forged"),
		IfNoneMatch: aws.String("*"), ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}); err == nil {
		t.Error("moto accepted a put with If-None-Match: * over an archived object")
	}
	if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("forged"),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256}); err != nil {
		t.Fatal(err)
	}

	now := base.Add(hot + 2*time.Hour)
	if n := env.ExpireAudit(t, now); n != 120 {
		t.Fatalf("the hot window took %d entries, want 120", n)
	}
	trail := &auditor.Trail{Reader: env.Reader, S3: client, Hot: hot, Now: now, PublicKey: &env.SigningKey.PublicKey}
	b, err := auditor.CollectTrail(ctx, trail, base, base.Add(2*p))
	if err != nil {
		t.Fatal(err)
	}
	r := auditor.Check(b, auditor.CheckOptions{PublicKey: &env.SigningKey.PublicKey, Now: now, Grace: audittest.DigestGrace, Period: p})
	if !r.OK() || r.Covered != 120 || len(trail.Problems) != 0 || !strings.Contains(trail.Sources(), "archive s3://"+bucket) {
		t.Errorf("verify from the locked bucket: covered %d, problems %v %v, read %s", r.Covered, r.Problems, trail.Problems, trail.Sources())
	}
}
