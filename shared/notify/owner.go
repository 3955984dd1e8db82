package notify

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Callers own their keys. Admission stores the keyed fingerprint of the calling principal on
// the record (Record.Owner); reading, cancelling and converting a record then require the same
// principal, and any other caller is answered as for a key nobody used (ErrNotFound), so a
// key's existence never leaks. One operator principal may read (never cancel or convert)
// every record. A repeat of the POST by another caller is a key reuse, never a replay.
//
// Keys are scoped to their owner: a record is stored under ScopedKey(owner, key), so two
// callers using the same key admit two independent records, and a key's existence is never
// learnt from a POST. A record stored under the bare key (admitted before keys were scoped) is
// still found by its owner's GET, DELETE and conversion (lookup falls back to it).
//
// A record admitted before owners were stored has none. It is owned by nobody: only the
// operator reads it. A repeat of its POST is still told apart by the request fingerprint
// alone, as before, since only a caller that holds its number and code can repeat it.

// ErrNoCaller means a request reached the domain without the principal that sent it.
var ErrNoCaller = errors.New("no calling principal")

// OwnerHasher returns the keyed fingerprint of a principal, stored as a record's owner. Being
// keyed, it tells a reader of the table nothing about who calls.
type OwnerHasher interface {
	OwnerFP(principal string) string
}

type callerKey struct{}

// WithCaller returns ctx carrying principal, the canonical ARN (CanonicalPrincipal) of whoever
// sends the request, as the API's adapter learnt it from the request's authenticated identity.
func WithCaller(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, callerKey{}, principal)
}

// CallerOf returns the principal WithCaller put in ctx, or "".
func CallerOf(ctx context.Context) string {
	p, _ := ctx.Value(callerKey{}).(string)
	return p
}

// ScopeSeparator joins an owner fingerprint and a caller's key into a stored key. The key
// pattern never admits it, so no caller's key can name a stored key of another owner.
const ScopeSeparator = "!"

// ScopedKey returns the stored key of the caller's key for owner ("" when ownership is off:
// the key itself).
func ScopedKey(owner, key string) string {
	if owner == "" {
		return key
	}
	return owner + ScopeSeparator + key
}

// CallerKey returns the caller's key of a stored key: what the API shows and accepts.
func CallerKey(stored string) string {
	if _, key, ok := strings.Cut(stored, ScopeSeparator); ok {
		return key
	}
	return stored
}

// ValidStoredKey reports whether stored can be the key of a stored record: a caller's key
// (ValidKey), or one scoped by an owner fingerprint of URL-safe base64.
func ValidStoredKey(stored string) bool {
	owner, key, ok := strings.Cut(stored, ScopeSeparator)
	if !ok {
		return ValidKey(stored)
	}
	return owner != "" && len(owner) <= maxOwnerLen && ownerPattern.MatchString(owner) && ValidKey(key)
}

// maxOwnerLen bounds an owner fingerprint in a stored key.
const maxOwnerLen = 64

var ownerPattern = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// lookup returns the record the caller in ctx names by key: the one stored under its scoped
// key, else (a record admitted before keys were scoped) the one under the bare key, which the
// access check (mayRead, owns) then judges by its stored owner. ownerARN, when set, names the
// owner in place of the caller; only the operator (or the owner itself) may name one, and any
// other caller, or an ARN that names no owner, gets ErrNotFound, as for an unknown key.
func (in *Service) lookup(ctx context.Context, key, ownerARN string) (Record, error) {
	principal := CallerOf(ctx)
	if ownerARN != "" {
		p, err := CanonicalPrincipal(ownerARN)
		if err != nil || (p != principal && (in.Operator == "" || principal != in.Operator)) {
			return Record{}, ErrNotFound
		}
		principal = p
	}
	var owner string
	if in.Owners != nil && principal != "" {
		owner = in.Owners.OwnerFP(principal)
	}
	rec, err := in.Store.Get(ctx, ScopedKey(owner, key))
	if errors.Is(err, ErrNotFound) && owner != "" {
		rec, err = in.Store.Get(ctx, key)
	}
	return rec, err
}

// ownerOf returns the owner to store on a record admitted for the caller in ctx: "" when
// ownership is off (no Owners), ErrNoCaller when ctx names nobody.
func (in *Service) ownerOf(ctx context.Context) (string, error) {
	if in.Owners == nil {
		return "", nil
	}
	p := CallerOf(ctx)
	if p == "" {
		return "", ErrNoCaller
	}
	return in.Owners.OwnerFP(p), nil
}

// owns reports whether the caller in ctx owns rec. With ownership off everyone does; a record
// without an owner (admitted before owners were stored) is owned by nobody.
func (in *Service) owns(ctx context.Context, rec Record) bool {
	if in.Owners == nil {
		return true
	}
	p := CallerOf(ctx)
	if p == "" || rec.Owner == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(rec.Owner), []byte(in.Owners.OwnerFP(p))) == 1
}

// mayRead reports whether the caller in ctx may read rec: its owner, or the operator.
func (in *Service) mayRead(ctx context.Context, rec Record) bool {
	return in.owns(ctx, rec) || (in.Operator != "" && CallerOf(ctx) == in.Operator)
}

// mayRepeat reports whether the caller in ctx may have its POST answered from rec (a replay,
// or the refusal stored under the key): its owner, or anyone for a record without an owner,
// where the request fingerprint alone decides as before owners were stored.
func (in *Service) mayRepeat(ctx context.Context, rec Record) bool {
	return rec.Owner == "" || in.owns(ctx, rec)
}

// The kinds of principal CanonicalPrincipal accepts, as they appear in an ARN's resource.
const (
	principalAssumedRole = "assumed-role/"
	principalRole        = "role/"
	principalUser        = "user/"
	principalRoot        = "root"
)

// CanonicalPrincipal returns the principal an IAM ARN stands for, in one form per principal,
// so that every session of a role owns the same keys:
//
//   - an assumed-role session, arn:aws:sts::<account>:assumed-role/<role>/<session>, and a
//     role, arn:aws:iam::<account>:role/<path>/<role>, are arn:aws:iam::<account>:role/<role>
//     (the session ARN carries no path, and a role's name is unique in its account);
//   - a user, arn:aws:iam::<account>:user/<path>/<name>, is arn:aws:iam::<account>:user/<name>;
//   - the account's root user is kept as it is.
//
// A federated user (sts ... federated-user/<name>) is refused: any user allowed
// sts:GetFederationToken mints whatever name it likes, so its ARN names no one owner.
//
// The partition (aws, aws-cn, aws-us-gov) is kept. Anything else is an error that quotes no
// part of arn.
func CanonicalPrincipal(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[1] == "" || parts[3] != "" || !allDigits(parts[4], 12) {
		return "", fmt.Errorf("notify.principal: not an IAM or STS principal ARN")
	}
	partition, service, account, res := parts[1], parts[2], parts[4], parts[5]
	iam := "arn:" + partition + ":iam::" + account + ":"
	last := res[strings.LastIndex(res, "/")+1:]
	switch {
	case service == "sts" && strings.HasPrefix(res, principalAssumedRole):
		role, session, ok := strings.Cut(strings.TrimPrefix(res, principalAssumedRole), "/")
		if ok && role != "" && session != "" && !strings.Contains(session, "/") {
			return iam + principalRole + role, nil
		}
	case service == "iam" && strings.HasPrefix(res, principalRole) && last != "":
		return iam + principalRole + last, nil
	case service == "iam" && strings.HasPrefix(res, principalUser) && last != "":
		return iam + principalUser + last, nil
	case service == "iam" && res == principalRoot:
		return arn, nil
	}
	return "", fmt.Errorf("notify.principal: not a role, session, user or root ARN")
}

func allDigits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
