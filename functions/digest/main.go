// Command digest is the Lambda function run every minute by an EventBridge schedule: it closes
// each ended audit period with a signed digest. It is assembled by package shared/wire/digest,
// which the local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/digest"
)

func main() { wire.Main(digest.Function) }
