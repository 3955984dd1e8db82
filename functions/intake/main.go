// Command intake is the Lambda function behind the HTTP API: POST, GET and DELETE
// /v1/notifications. It is assembled by package shared/wire/intake, which the local stack
// (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/intake"
)

func main() { wire.Main(intake.Function) }
