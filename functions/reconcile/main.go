// Command reconcile is the Lambda function on the reconcile queue: it settles attempts whose
// outcome is unknown through the provider's lookup, and holds nothing that can send. It is
// assembled by package shared/wire/reconcile, which the local stack (infra/local) runs too.
package main

import (
	"github.com/resetnotify/resetnotify/shared/wire"
	"github.com/resetnotify/resetnotify/shared/wire/reconcile"
)

func main() { wire.Main(reconcile.Function) }
