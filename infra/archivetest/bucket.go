// Package archivetest is an in-memory versioned S3 bucket for the archive's tests: PutObject
// (checking the SHA-256 the caller sends, and If-None-Match: *, as S3 does, and giving each
// version an ID) and GetObject (a given version, or the latest). For tamper tests: Replace
// and Drop rewrite or remove stored versions in place, which a bucket under Object Lock in
// compliance mode refuses in AWS (the template's policy tests and the emulator test show
// that) but a copy of it, or an emulator, may not; Shadow adds a version, as a put that
// skipped If-None-Match would.
package archivetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Bucket holds every version of every object put, by key; a version's ID is its position
// (from 1) among all versions the bucket ever stored.
type Bucket struct {
	mu       sync.Mutex
	versions map[string][]version
	next     int
	// Puts counts PutObject calls, refused ones included.
	Puts int
}

type version struct {
	id   string
	body []byte
}

// NewBucket returns an empty bucket.
func NewBucket() *Bucket { return &Bucket{versions: map[string][]version{}} }

// PutObject stores a new version of the key; a ChecksumSHA256 that is not the body's is
// refused, as S3 refuses it (BadDigest), and so is If-None-Match: * on a key that has a
// version (412 PreconditionFailed).
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
	if aws.ToString(in.IfNoneMatch) == "*" && len(b.versions[k]) > 0 {
		return nil, &smithy.GenericAPIError{Code: "PreconditionFailed", Message: "At least one of the pre-conditions you specified did not hold"}
	}
	id := b.add(k, body)
	return &s3.PutObjectOutput{ChecksumSHA256: aws.String(got), VersionId: aws.String(id)}, nil
}

func (b *Bucket) add(key string, body []byte) string {
	b.next++
	id := strconv.Itoa(b.next)
	b.versions[key] = append(b.versions[key], version{id: id, body: body})
	return id
}

// GetObject returns the version of the key in.VersionId names, else the latest, or NoSuchKey.
func (b *Bucket) GetObject(_ context.Context, in *s3.GetObjectInput, _ ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	vs := b.versions[aws.ToString(in.Key)]
	if len(vs) == 0 {
		return nil, &s3types.NoSuchKey{Message: aws.String("no such key")}
	}
	v := vs[len(vs)-1]
	if want := aws.ToString(in.VersionId); want != "" {
		i := sort.Search(len(vs), func(i int) bool { n, _ := strconv.Atoi(vs[i].id); w, _ := strconv.Atoi(want); return n >= w })
		if i == len(vs) || vs[i].id != want {
			return nil, &smithy.GenericAPIError{Code: "NoSuchVersion", Message: "The specified version does not exist."}
		}
		v = vs[i]
	}
	return &s3.GetObjectOutput{Body: io.NopCloser(bytes.NewReader(v.body)), ContentLength: aws.Int64(int64(len(v.body))),
		VersionId: aws.String(v.id)}, nil
}

// Latest returns the latest version of key.
func (b *Bucket) Latest(key string) ([]byte, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	vs := b.versions[key]
	if len(vs) == 0 {
		return nil, false
	}
	return vs[len(vs)-1].body, true
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

// Replace rewrites every version of key with body, keeping their IDs: a tamperer's object.
func (b *Bucket) Replace(key string, body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range b.versions[key] {
		b.versions[key][i].body = body
	}
}

// Shadow adds body as the latest version of key, with no checksum or If-None-Match check: a
// forged version put over a real one.
func (b *Bucket) Shadow(key string, body []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(key, body)
}

// Drop removes every version of key.
func (b *Bucket) Drop(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.versions, key)
}
