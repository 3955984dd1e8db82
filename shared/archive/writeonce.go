package archive

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// putPart puts one part write-once and returns its version ID. A key already taken holds the
// part of an earlier run that stopped before its archive item (the bucket policy lets only
// this step put): its bytes must be this part's, and its version is the one kept.
func (a *Archiver) putPart(ctx context.Context, p Part) (string, error) {
	v, taken, err := a.put(ctx, p.Ref.Key, p.Body, "application/gzip")
	if err != nil || !taken {
		return v, err
	}
	body, v, err := a.existing(ctx, p.Ref.Key)
	if err != nil {
		return "", err
	}
	if sha256Hex(body) != p.Ref.SHA256 {
		return "", fmt.Errorf("put %s: the key holds another object (SHA-256 %s, not %s)", p.Ref.Key, sha256Hex(body), p.Ref.SHA256)
	}
	return v, nil
}

// putManifest signs m and puts it write-once; it returns the manifest's bytes and version ID.
// When an earlier run's manifest is already there, that one is kept if it names this period,
// its digest and the same objects (its signature and time differ: signatures are not
// deterministic).
func (a *Archiver) putManifest(ctx context.Context, m Manifest) ([]byte, string, error) {
	sig, err := a.Signer.Sign(ctx, ManifestSum(m))
	if err != nil {
		return nil, "", fmt.Errorf("sign manifest: %w", err)
	}
	m.Signature = base64.StdEncoding.EncodeToString(sig)
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, "", err
	}
	key := ManifestKey(m.PeriodStart)
	v, taken, err := a.put(ctx, key, body, "application/json")
	if err != nil || !taken {
		return body, v, err
	}
	if body, v, err = a.existing(ctx, key); err != nil {
		return nil, "", err
	}
	var got Manifest
	if err := json.Unmarshal(body, &got); err != nil || got.Format != m.Format || !got.PeriodStart.Equal(m.PeriodStart) ||
		!got.PeriodEnd.Equal(m.PeriodEnd) || got.Count != m.Count || got.TreeRoot != m.TreeRoot ||
		got.DigestSignature != m.DigestSignature || !slices.Equal(got.Objects, m.Objects) {
		return nil, "", fmt.Errorf("put %s: the key holds a manifest that is not this period's", key)
	}
	return body, v, nil
}

// put stores body under key only if the key is free (If-None-Match: *), with its SHA-256,
// which S3 checks against what it received (BadDigest), and checks the checksum S3 reports
// back. taken is true when the key already holds an object (412 Precondition Failed).
func (a *Archiver) put(ctx context.Context, key string, body []byte, contentType string) (version string, taken bool, err error) {
	want := base64.StdEncoding.EncodeToString(sha256Sum(body))
	out, err := a.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(a.Bucket), Key: aws.String(key), Body: bytes.NewReader(body), IfNoneMatch: aws.String("*"),
		ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String(contentType),
		ChecksumAlgorithm: s3types.ChecksumAlgorithmSha256, ChecksumSHA256: aws.String(want),
	})
	var api smithy.APIError
	switch {
	case errors.As(err, &api) && api.ErrorCode() == "PreconditionFailed":
		return "", true, nil
	case err != nil:
		return "", false, fmt.Errorf("put %s: %w", key, err)
	case aws.ToString(out.ChecksumSHA256) != "" && aws.ToString(out.ChecksumSHA256) != want:
		return "", false, fmt.Errorf("put %s: S3 stored a checksum other than the object's", key)
	case aws.ToString(out.VersionId) == "":
		return "", false, fmt.Errorf("put %s: S3 returned no version ID (is the bucket versioned?)", key)
	}
	return aws.ToString(out.VersionId), false, nil
}

// existing reads the object a write-once put found at key, and its version ID.
func (a *Archiver) existing(ctx context.Context, key string) ([]byte, string, error) {
	out, err := a.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(a.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, "", fmt.Errorf("get %s (already put): %w", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(io.LimitReader(out.Body, 1<<30))
	if err != nil {
		return nil, "", fmt.Errorf("get %s (already put): %w", key, err)
	}
	return body, aws.ToString(out.VersionId), nil
}

// versionsAttribute is an archive item's object_versions: a map of object key to version ID.
func versionsAttribute(v map[string]string) ddbtypes.AttributeValue {
	m := make(map[string]ddbtypes.AttributeValue, len(v))
	for k, id := range v {
		m[k] = &ddbtypes.AttributeValueMemberS{Value: id}
	}
	return &ddbtypes.AttributeValueMemberM{Value: m}
}

// versionsFrom reads an archive item's object_versions.
func versionsFrom(v ddbtypes.AttributeValue) (map[string]string, error) {
	m, ok := v.(*ddbtypes.AttributeValueMemberM)
	if !ok {
		return nil, errors.New("object_versions is not a map")
	}
	out := make(map[string]string, len(m.Value))
	for k, e := range m.Value {
		s, ok := e.(*ddbtypes.AttributeValueMemberS)
		if !ok {
			return nil, fmt.Errorf("object_versions[%q] is not a string", k)
		}
		out[k] = s.Value
	}
	return out, nil
}
