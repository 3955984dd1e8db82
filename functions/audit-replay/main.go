// Command audit-replay is the Lambda function on the audit function's on-failure queue: it
// writes the audit entries of the stream batches the audit function gave up on. It is assembled
// by package shared/wire/auditreplay, which the local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/auditreplay"
)

func main() { wire.Main(auditreplay.Function) }
