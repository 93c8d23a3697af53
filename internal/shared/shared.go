// Package shared runs one call for every caller that asks while it runs,
// so that a burst of identical requests — a thousand probes of /ready,
// three hundred scrapes of /metrics — costs one database read or one
// gathering rather than one each.
//
// A worked example, three callers of one Call:
//
//  1. A asks: nothing runs, so A's fn starts.
//  2. B asks while it runs: B waits for A's result.
//  3. A's fn returns: A and B get its result, and the next to ask
//     starts a new call.
//  4. C asked with a context that ended before the result: C gets its
//     context's error, and the call goes on for the others.
//
// fn runs detached from every caller's context (it gets none): a caller
// going away must not fail the call for the others, so fn bounds its own
// time.
package shared

import (
	"context"

	"golang.org/x/sync/singleflight"
)

// Call shares one run of a function among concurrent callers. The zero
// value is ready to use.
type Call[T any] struct {
	group singleflight.Group
}

// Do returns fn's result, from a run that started at or after this call
// or that was under way when it came; or ctx's error if ctx ends first.
func (c *Call[T]) Do(ctx context.Context, fn func() (T, error)) (T, error) {
	results := c.group.DoChan("", func() (any, error) { return fn() })
	select {
	case r := <-results:
		v, _ := r.Val.(T)
		return v, r.Err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
