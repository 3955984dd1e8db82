package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// maxSecretFile bounds what --to-file and --param-file read, stdin included.
const maxSecretFile = 64 << 10

// stdinName is the file name that means standard input.
const stdinName = "-"

// sendHelp opens the help of send: where the secrets come from, and why.
const sendHelp = `usage: resetctl send [flags] --event-id E --purpose P --to-file FILE --param-file FILE (--expires-in D | --expires-at T)

The number and the params are secrets, so send reads them from files, never from its command
line, where ps and the shell history would show them. "-" as a file name is standard input
(for one of the two at most).
  --to-file FILE     the E.164 number, e.g. +12015550177; surrounding whitespace and the
                     final newline are ignored.
  --param-file FILE  one name=value line per param (reset_url, code or link; the purpose says
                     which): the name is what comes before the first "=", the value all after
                     it; surrounding whitespace, blank lines and lines starting with # are
                     ignored.
--to and --param are refused (exit 2), whatever their value: a secret on the command line has
leaked by the time resetctl runs. Neither the number nor a param is ever printed.

Example (printf is a shell builtin, so no process shows the code):
  printf 'code=%s\n' "$CODE" | resetctl send --event-id E --purpose one_time_code \
    --to-file to.txt --param-file - --expires-in 10m

Flags:`

// refusedFlag is --to or --param, defined only to refuse it: Set keeps no value, so that the
// refusal cannot print it, and the value given after the flag is not taken for an argument.
type refusedFlag struct{ given bool }

func (f *refusedFlag) String() string { return "" }

func (f *refusedFlag) Set(string) error {
	f.given = true
	return nil
}

// secretFiles are the flags of send that name where the secrets are.
type secretFiles struct {
	to, params       string
	oldTo, oldParams refusedFlag
	stdin            io.Reader
}

// readSecret reads the file name (stdin for "-"), at most maxSecretFile bytes, less a leading
// byte order mark. Its errors name the flag, never what was read.
func (sf *secretFiles) readSecret(flagName, name string) ([]byte, error) {
	var r io.Reader = sf.stdin
	if name != stdinName {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", flagName, cause(err))
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxSecretFile+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("--%s: read: %w", flagName, cause(err))
	case len(b) > maxSecretFile:
		return nil, fmt.Errorf("--%s holds more than %d KiB", flagName, maxSecretFile>>10)
	}
	return bytes.TrimPrefix(b, []byte("\uFEFF")), nil // a byte order mark, as some editors write
}

// errRefused answers --to and --param. It names the flags to use instead, and never the value.
var errRefused = errors.New("--to and --param are refused: a secret on the command line shows in ps " +
	"and the shell history; put the number in a file for --to-file and the params, as name=value " +
	"lines, in one for --param-file (\"-\" reads either from stdin)")

// refused returns errRefused when --to or --param was given.
func (sf *secretFiles) refused() error {
	if sf.oldTo.given || sf.oldParams.given {
		return errRefused
	}
	return nil
}

// read returns the number and the params the files hold, or what is wrong with them.
func (sf *secretFiles) read() (string, map[string]string, error) {
	if err := sf.refused(); err != nil {
		return "", nil, err
	}
	switch {
	case sf.to == "" || sf.params == "":
		return "", nil, errors.New("--to-file and --param-file are required")
	case sf.to == stdinName && sf.params == stdinName:
		return "", nil, errors.New("--to-file and --param-file cannot both read stdin (-)")
	}
	b, err := sf.readSecret("to-file", sf.to)
	if err != nil {
		return "", nil, err
	}
	to := string(bytes.TrimSpace(b))
	if to == "" || strings.ContainsAny(to, " \t\r\n") {
		return "", nil, errors.New("--to-file must hold one number")
	}
	if b, err = sf.readSecret("param-file", sf.params); err != nil {
		return "", nil, err
	}
	params, err := parseParams(b)
	if err != nil {
		return "", nil, err
	}
	return to, params, nil
}

// parseParams reads name=value lines. Its errors give the line's number, never its text: a
// line without "=" may be a bare secret.
func parseParams(b []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxSecretFile+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return nil, fmt.Errorf("--param-file line %d: want name=value", n)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--param-file line %d: names a param an earlier line named", n)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--param-file: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("--param-file holds no name=value line")
	}
	return out, nil
}

// cause is the cause of a file error without the path, which the flag's value already says.
func cause(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
