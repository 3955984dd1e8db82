// Command sweeper is the Lambda function run every minute by an EventBridge schedule: it re-
// enqueues, expires or reclaims the overdue records. It is assembled by package
// shared/wire/sweeper, which the local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/sweeper"
)

func main() { wire.Main(sweeper.Function) }
