// Command audit is the Lambda function on the notifications table's stream: one redacted, hash-
// chained audit entry per transition. It is assembled by package shared/wire/audit, which the
// local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/audit"
)

func main() { wire.Main(audit.Function) }
