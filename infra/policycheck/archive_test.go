package policycheck_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/resetnotify/resetnotify/infra/policycheck"
)

// prop returns the property at path of v (maps only).
func prop(v any, path ...string) any {
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// TestArchiveBucketIsWriteOnce: Object Lock on in compliance mode with the audit retention as
// default, versioning, SSE-KMS with the archive key, public access blocked, Glacier Instant
// Retrieval after 30 days, and kept when the stack goes.
func TestArchiveBucketIsWriteOnce(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		b := tpl.Resources["AuditArchiveBucket"]
		p := map[string]any(b.Properties)
		checks := []struct {
			what string
			ok   bool
		}{
			{"Object Lock enabled", prop(p, "ObjectLockEnabled") == true && prop(p, "ObjectLockConfiguration", "ObjectLockEnabled") == "Enabled"},
			{"compliance mode", prop(p, "ObjectLockConfiguration", "Rule", "DefaultRetention", "Mode") == "COMPLIANCE"},
			{"default retention = AuditRetentionDays", policycheck.Ref(prop(p, "ObjectLockConfiguration", "Rule", "DefaultRetention", "Days")) == "AuditRetentionDays"},
			{"versioning", prop(p, "VersioningConfiguration", "Status") == "Enabled"},
			{"public access blocked", prop(p, "PublicAccessBlockConfiguration", "BlockPublicAcls") == true &&
				prop(p, "PublicAccessBlockConfiguration", "BlockPublicPolicy") == true &&
				prop(p, "PublicAccessBlockConfiguration", "IgnorePublicAcls") == true &&
				prop(p, "PublicAccessBlockConfiguration", "RestrictPublicBuckets") == true},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("AuditArchiveBucket: not %s", c.what)
			}
		}
		sse := listOf(prop(p, "BucketEncryption", "ServerSideEncryptionConfiguration"))
		if len(sse) != 1 || prop(sse[0], "ServerSideEncryptionByDefault", "SSEAlgorithm") != "aws:kms" ||
			policycheck.Ref(prop(sse[0], "ServerSideEncryptionByDefault", "KMSMasterKeyID")) != "AuditArchiveKey" {
			t.Errorf("AuditArchiveBucket is not encrypted with AuditArchiveKey: %s", policycheck.ResourceText(sse))
		}
		rules := listOf(prop(p, "LifecycleConfiguration", "Rules"))
		glacier := false
		for _, r := range rules {
			if prop(r, "ExpirationInDays") != nil || prop(r, "NoncurrentVersionExpiration") != nil {
				t.Errorf("a lifecycle rule expires archive objects: %s", policycheck.ResourceText(r))
			}
			for _, tr := range listOf(prop(r, "Transitions")) {
				glacier = glacier || (prop(tr, "StorageClass") == "GLACIER_IR" && prop(tr, "TransitionInDays") == float64(30))
			}
		}
		if !glacier {
			t.Error("no lifecycle rule moves archive objects to Glacier Instant Retrieval after 30 days")
		}
		if b.DeletionPolicy != "Retain" {
			t.Errorf("AuditArchiveBucket DeletionPolicy = %q, want Retain", b.DeletionPolicy)
		}
	})
}

// TestArchiveBucketPolicyDenies deletes, retention changes and policy changes to everyone,
// puts to all but the archive step, and plain HTTP.
func TestArchiveBucketPolicyDenies(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		var stmts []policycheck.Statement
		for _, r := range tpl.Resources {
			if r.Type == "AWS::S3::BucketPolicy" && policycheck.Ref(r.Properties["Bucket"]) == "AuditArchiveBucket" {
				stmts = policycheck.Statements("", r.Properties["PolicyDocument"])
			}
		}
		denied := func(action string, cond func(map[string]any) bool) bool {
			return slices.ContainsFunc(stmts, func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows(action) && cond(s.Condition)
			})
		}
		always := func(c map[string]any) bool { return c == nil }
		for _, a := range []string{"s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectRetention", "s3:BypassGovernanceRetention", "s3:DeleteBucket"} {
			if !denied(a, always) {
				t.Errorf("the archive bucket's policy does not deny %s to every principal", a)
			}
		}
		if !denied("s3:PutObject", func(c map[string]any) bool { return len(c) == 1 && onlyPrincipals(c, "DigestRole") }) {
			t.Error("the archive bucket's policy does not deny s3:PutObject to all but the digest role (the archive step)")
		}
		if !denied("s3:PutObject", func(c map[string]any) bool {
			return policycheck.ResourceText(c) == `{"Null":{"s3:if-none-match":"true"}}`
		}) {
			t.Error("the archive bucket's policy does not deny s3:PutObject without If-None-Match (a version over an archived object)")
		}
		if !denied("s3:GetObject", func(c map[string]any) bool {
			return policycheck.ResourceText(c) == `{"Bool":{"aws:SecureTransport":"false"}}`
		}) {
			t.Error("the archive bucket's policy does not refuse plain HTTP")
		}
	})
}

// TestArchiveProtectionsOnlyForTheDeploymentRole: the archive bucket's policy, lock,
// lifecycle, encryption and versioning, and the archive key's policy, are denied to every
// principal but DeploymentRoleArn, and to every principal when it is empty; no exemption
// rests on aws:CalledVia (which any stack's CloudFormation calls carry).
func TestArchiveProtectionsOnlyForTheDeploymentRole(t *testing.T) {
	bucket := []string{"s3:PutBucketPolicy", "s3:DeleteBucketPolicy", "s3:PutBucketObjectLockConfiguration", "s3:PutLifecycleConfiguration",
		"s3:PutEncryptionConfiguration", "s3:PutBucketVersioning", "s3:PutBucketPublicAccessBlock"}
	forEachDeployer(t, func(t *testing.T, tpl policycheck.Template, deployer string) {
		var stmts []policycheck.Statement
		for _, r := range tpl.Resources {
			if r.Type == "AWS::S3::BucketPolicy" && policycheck.Ref(r.Properties["Bucket"]) == "AuditArchiveBucket" {
				stmts = policycheck.Statements("", r.Properties["PolicyDocument"])
			}
		}
		for _, a := range bucket {
			if !deniedButDeployer(stmts, a, deployer) {
				t.Errorf("deployment role %q: the archive bucket's policy does not deny %s to every principal but it", deployer, a)
			}
		}
		if !deniedButDeployer(resourcePolicy(tpl, "AuditArchiveKey", "KeyPolicy"), "kms:PutKeyPolicy", deployer) {
			t.Errorf("deployment role %q: the archive key's policy does not deny kms:PutKeyPolicy to every principal but it", deployer)
		}
		bypass := tpl.Resources["AuditArchiveKey"].Properties["BypassPolicyLockoutSafetyCheck"]
		if (deployer == "") != (bypass == true) {
			t.Errorf("deployment role %q: AuditArchiveKey BypassPolicyLockoutSafetyCheck = %v; KMS refuses a policy that locks everyone out without it", deployer, bypass)
		}
	})
}

// TestOnlyTheArchiveStepPutsAndAuditorsRead: the digest role may only put into the archive
// and read back what it put (no delete or retention call); no other role may put; the
// auditors' role reads and denies itself every write.
func TestOnlyTheArchiveStepPutsAndAuditorsRead(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		for role, stmts := range policycheck.RolePolicies(tpl) {
			for _, s := range stmts {
				if s.Effect != "Allow" {
					continue
				}
				for _, a := range s.Actions {
					if !strings.HasPrefix(a, "s3:") {
						continue
					}
					switch {
					case role == "DigestRole" && a != "s3:PutObject" && a != "s3:GetObject":
						t.Errorf("DigestRole may call %s (%s): the archive step may only put and read back", a, s.Sid)
					case role != "DigestRole" && role != "AuditorRole":
						t.Errorf("%s may call %s on %s (%s)", role, a, policycheck.ResourceText(s.Resources), s.Sid)
					case role == "AuditorRole" && !strings.HasPrefix(a, "s3:Get") && !strings.HasPrefix(a, "s3:List"):
						t.Errorf("AuditorRole may call %s (%s): auditors only read", a, s.Sid)
					}
				}
			}
		}
		auditor := policycheck.RolePolicies(tpl)["AuditorRole"]
		if !slices.ContainsFunc(auditor, func(s policycheck.Statement) bool { return s.Effect == "Allow" && s.Allows("s3:GetObject") }) {
			t.Error("AuditorRole may not read the archive")
		}
		for _, a := range []string{"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectRetention", "s3:BypassGovernanceRetention"} {
			if !slices.ContainsFunc(auditor, func(s policycheck.Statement) bool { return s.Effect == "Deny" && s.Allows(a) }) {
				t.Errorf("AuditorRole does not deny itself %s", a)
			}
		}
	})
}

// TestArchiveKeyStays: the archive's key cannot be disabled or scheduled for deletion by
// anyone (that would make the archive unreadable), and its policy changes only with the stack.
func TestArchiveKeyStays(t *testing.T) {
	forEachVariant(t, func(t *testing.T, tpl policycheck.Template) {
		key := resourcePolicy(tpl, "AuditArchiveKey", "KeyPolicy")
		for _, a := range []string{"kms:ScheduleKeyDeletion", "kms:DisableKey"} {
			if !slices.ContainsFunc(key, func(s policycheck.Statement) bool {
				return s.Effect == "Deny" && s.Principal == "*" && s.Allows(a) && s.Condition == nil
			}) {
				t.Errorf("the archive key's policy does not deny %s to everyone", a)
			}
		}
		if tpl.Resources["AuditArchiveKey"].DeletionPolicy != "Retain" {
			t.Error("AuditArchiveKey is not retained when the stack goes")
		}
	})
}
