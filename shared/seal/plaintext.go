package seal

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/resetnotify/resetnotify/shared/notify"
)

// A version 2 envelope (Version) encrypts the secret in a compact binary form instead of
// JSON, so the record that holds it stays under 1 KB (docs/benchmarks.md): about 35 bytes
// less for a code or a link. The form, every length big-endian:
//
//	1 byte n, n bytes   the number (To)
//	1 byte n, n bytes   the locale
//	then per parameter, by name:
//	1 byte n, n bytes   its name
//	2 bytes n, n bytes  its value
//
// A secret with a field too long for its length (never a valid request's) is sealed in a
// version 1 envelope, JSON, which Open still reads, as it reads every envelope sealed before.

// versionJSON is the envelope version whose plaintext is the JSON of notify.Secret.
const versionJSON byte = 1

var errPlaintext = errors.New("malformed plaintext")

// encodeSecret returns s's plaintext and the envelope version it goes in.
func encodeSecret(s notify.Secret) ([]byte, byte, error) {
	if b, ok := compactSecret(s); ok {
		return b, Version, nil
	}
	b, err := json.Marshal(s)
	return b, versionJSON, err
}

// compactSecret returns s in the compact form, or false when a field does not fit it.
func compactSecret(s notify.Secret) ([]byte, bool) {
	if len(s.To) > 0xff || len(s.Locale) > 0xff {
		return nil, false
	}
	out := make([]byte, 0, 2+len(s.To)+len(s.Locale)+64)
	out = append(append(out, byte(len(s.To))), s.To...)
	out = append(append(out, byte(len(s.Locale))), s.Locale...)
	for _, name := range slices.Sorted(maps.Keys(s.Params)) {
		v := s.Params[name]
		if len(name) == 0 || len(name) > 0xff || len(v) > 0xffff {
			return nil, false
		}
		out = append(append(out, byte(len(name))), name...)
		out = binary.BigEndian.AppendUint16(out, uint16(len(v)))
		out = append(out, v...)
	}
	return out, true
}

// decodeSecret reads the plaintext of an envelope of version v.
func decodeSecret(v byte, b []byte) (notify.Secret, error) {
	var s notify.Secret
	if v == versionJSON {
		err := json.Unmarshal(b, &s)
		return s, err
	}
	take := func(n int) ([]byte, bool) {
		if n > len(b) {
			return nil, false
		}
		out := b[:n]
		b = b[n:]
		return out, true
	}
	short := func(wide bool) (string, bool) {
		n := 1
		if wide {
			n = 2
		}
		l, ok := take(n)
		if !ok {
			return "", false
		}
		size := int(l[0])
		if wide {
			size = int(binary.BigEndian.Uint16(l))
		}
		out, ok := take(size)
		return string(out), ok
	}
	var ok bool
	if s.To, ok = short(false); !ok {
		return notify.Secret{}, errPlaintext
	}
	if s.Locale, ok = short(false); !ok {
		return notify.Secret{}, errPlaintext
	}
	for len(b) > 0 {
		name, ok1 := short(false)
		value, ok2 := short(true)
		if !ok1 || !ok2 || name == "" {
			return notify.Secret{}, errPlaintext
		}
		if s.Params == nil {
			s.Params = map[string]string{}
		}
		s.Params[name] = value
	}
	return s, nil
}
