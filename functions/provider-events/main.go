// Command provider-events is the Lambda function that takes SMS delivery receipts, from the
// receipts SNS topic and from the simulator's webhook. It is assembled by package
// shared/wire/providerevents, which the local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/providerevents"
)

func main() { wire.Main(providerevents.Function) }
