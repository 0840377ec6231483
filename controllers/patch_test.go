/*
Copyright The Metal3 Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controllers

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
)

// TestIgnoreGoneAggregates: an error made of NotFound errors only, however
// aggregated and wrapped, is an object that is gone; anything else in it
// is kept, whole.
func TestIgnoreGoneAggregates(t *testing.T) {
	gr := schema.GroupResource{Group: "infrastructure.cluster.x-k8s.io", Resource: "metal3machines"}
	notFound := apierrors.NewNotFound(gr, "worker-0")
	conflict := apierrors.NewConflict(gr, "worker-0", errors.New("changed"))
	// As the patch helper wraps each request's error and then the
	// aggregate (with pkg/errors, which unwraps as %w does).
	wrap := func(err error) error { return fmt.Errorf("failed to patch status: %w", err) }
	aggregate := func(errs ...error) error {
		return fmt.Errorf("failed to patch Metal3Machine tenant-a/worker-0: %w", kerrors.NewAggregate(errs))
	}
	tests := []struct {
		name string
		err  error
		kept bool
	}{
		{name: "no error"},
		{name: "NotFound", err: notFound},
		{name: "NotFound, wrapped", err: wrap(notFound)},
		{name: "the patch helper's aggregate of NotFound", err: aggregate(wrap(notFound), wrap(notFound), wrap(notFound))},
		{name: "a bare aggregate of NotFound", err: kerrors.NewAggregate([]error{notFound})},
		{name: "nested aggregates of NotFound", err: aggregate(wrap(notFound), aggregate(notFound, wrap(notFound)))},
		{name: "Conflict", err: conflict, kept: true},
		{name: "an aggregate of NotFound and Conflict", err: aggregate(wrap(notFound), wrap(conflict)), kept: true},
		{name: "a Conflict nested in aggregates of NotFound", err: aggregate(notFound, aggregate(notFound, conflict)), kept: true},
		{name: "another error", err: errors.New("connection refused"), kept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ignoreGone(tt.err)
			switch {
			case tt.kept && !errors.Is(got, tt.err):
				t.Errorf("ignoreGone(%v) = %v, want it kept", tt.err, got)
			case !tt.kept && got != nil:
				t.Errorf("ignoreGone(%v) = %v, want nil", tt.err, got)
			}
		})
	}
	// Why the helper exists: apimachinery does not see through an aggregate.
	if apierrors.IsNotFound(aggregate(notFound, notFound)) {
		t.Error("apierrors.IsNotFound sees through an aggregate now: ignoreGone could be simpler")
	}
}
