// Command echo is a Lambda function for the rie package's tests: it returns its event, or
// fails when the event asks it to.
package main

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(_ context.Context, ev map[string]any) (map[string]any, error) {
		if ev["fail"] == true {
			return nil, errors.New("asked to fail")
		}
		return ev, nil
	})
}
