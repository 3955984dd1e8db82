// Package archivetest is an in-memory S3 bucket for the archive's tests: PutObject (checking
// the SHA-256 the caller sends, as S3 does) and GetObject, and, for tamper tests, Replace and
// Drop, which a bucket under Object Lock in compliance mode refuses in AWS (the template's
// policy tests and the emulator test show that) but a copy of it, or an emulator, may not.
package archivetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// Bucket holds every version of every object put, by key.
type Bucket struct {
	mu       sync.Mutex
	versions map[string][][]byte
	// Puts counts PutObject calls.
	Puts int
}

// NewBucket returns an empty bucket.
func NewBucket() *Bucket { return &Bucket{versions: map[string][][]byte{}} }

// PutObject stores a new version of the key; a ChecksumSHA256 that is not the body's is
// refused, as S3 refuses it (BadDigest).
func (b *Bucket) PutObject(_ context.Context, in *s3.PutObjectInput, _ ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	body, err := io.ReadAll(in.Body)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	got := base64.StdEncoding.EncodeToString(sum[:])
	if want := aws.ToString(in.ChecksumSHA256); want != "" && want != got {
		return nil, fmt.Errorf("BadDigest: the SHA-256 you specified did not match the calculated checksum")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.Puts++
	k := aws.ToString(in.Key)
	b.versions[k] = append(b.versions[k], body)
	return &s3.PutObjectOutput{ChecksumSHA256: aws.String(got), VersionId: aws.String(fmt.Sprint(len(b.versions[k])))}, nil
}

// GetObject returns the latest version of the key, or NoSuchKey.
func (b *Bucket) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	body, ok := b.Latest(aws.ToString(in.Key))
	if !ok {
		return nil, &s3types.NoSuchKey{Message: aws.String("no such key")}
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(body)), ContentLength: aws.Int64(int64(len(body)))}, nil
}

// Latest returns the latest version of key.
func (b *Bucket) Latest(key string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	vs := b.versions[key]
	if len(vs) == 0 {
		return nil, false
	}
	return vs[len(vs)-1], true
}

// Versions returns how many versions key has.
func (b *Bucket) Versions(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.versions[key])
}

// Keys returns the keys, sorted.
func (b *Bucket) Keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.versions))
	for k := range b.versions {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Replace makes body the latest version of key, with no checksum check: a tamperer's object.
func (b *Bucket) Replace(key string, body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.versions[key] = append(b.versions[key], body)
}

// Drop removes every version of key.
func (b *Bucket) Drop(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.versions, key)
}
