// Package wiretest gives the wire packages' tests a Lambda environment: what the Lambda
// service always sets (region and the execution role's credentials, as awsclient.FromLambdaEnv
// reads them) under the variables a test names, and the emulators' endpoints that `make test`
// puts in the process environment (AWS_ENDPOINT_URL*), as a local run passes them.
package wiretest

import (
	"os"
	"strings"
)

// Env returns a getenv over m, with AWS_REGION, AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
// set to local values unless m sets them (to "" as well), and the process's AWS_ENDPOINT_URL*
// variables unless m sets them.
func Env(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") {
			return os.Getenv(k)
		}
		return Lambda[k]
	}
}

// Lambda is what the Lambda service sets in every function's environment, with local values.
var Lambda = map[string]string{
	"AWS_REGION":            "us-east-1",
	"AWS_ACCESS_KEY_ID":     "local",
	"AWS_SECRET_ACCESS_KEY": "local",
}
