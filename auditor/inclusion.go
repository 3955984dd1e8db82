package auditor

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/resetnotify/resetnotify/shared/auditlog"
)

// VerifyInclusion checks that the entry l names is leaf index of d's tree, by path: the root
// that the leaf and the path give is the root that d signs. It checks nothing about d's
// signature.
func VerifyInclusion(d auditlog.Digest, l auditlog.ManifestLine, index uint64, path [][]byte) error {
	if d.Version < 2 {
		return errors.New("the digest is a version 1 (manifest) digest: it has no tree")
	}
	root, err := hex.DecodeString(d.Root)
	if err != nil || d.Count < 0 {
		return errors.New("the digest's tree root is not hex")
	}
	if err := proof.VerifyInclusion(rfc6962.DefaultHasher, index, uint64(d.Count), auditlog.LeafHash(l), path, root); err != nil {
		return fmt.Errorf("the entry and its path do not lead to the signed root of %s", d.Period())
	}
	return nil
}
