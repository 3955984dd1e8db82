// Command dispatch is the Lambda function on the dispatch queue: it leases each due record,
// sends it through the SMS provider and schedules what comes next. It is assembled by package
// shared/wire/dispatch, which the local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/dispatch"
)

func main() { wire.Main(dispatch.Function) }
