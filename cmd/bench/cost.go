package main

import (
	"context"
	"io"
)

// costOptions shape the cost benchmark.
type costOptions struct {
	// N is how many notifications are taken from admission to delivered.
	N int
}

// costBench measures capacity, log bytes, requests and durations per notification
// (capacityBench) and prints them with the dollar cost model.
func costBench(ctx context.Context, ddbEndpoint, sqsEndpoint string, o costOptions, out io.Writer) error {
	lc, err := capacityBench(ctx, ddbEndpoint, sqsEndpoint, o.N)
	if err != nil {
		return err
	}
	printCapacity(out, lc)
	return nil
}
