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

package hostbinding

import (
	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// A consumer may choose how its host is cleaned (a Metal3Machine's
// automatedCleaningMode), but only for itself: when the host goes back to
// the pool, it is cleaned as the pool admin set it, or the next tenant
// would land on disks nobody wiped. The pool's mode is recorded on the host
// (PoolCleaningModeAnnotation) the first time a consumer changes it, and
// given back before the host is deprovisioned. The one exception is a host
// kept for its owner's next machine (node reuse), which upstream CAPM3
// deprovisions without cleaning to keep its disks across an upgrade: it is
// marked (pool.UncleanedAnnotation) so that no other cluster takes it.

// setCleaningMode gives host the consumer's cleaning mode, if it chose one
// (mode is not empty), after recording the pool's.
func setCleaningMode(host *bmov1alpha1.BareMetalHost, mode string) {
	if mode == "" || host.Spec.AutomatedCleaningMode == bmov1alpha1.AutomatedCleaningMode(mode) {
		return
	}
	if _, recorded := host.Annotations[PoolCleaningModeAnnotation]; !recorded {
		if host.Annotations == nil {
			host.Annotations = map[string]string{}
		}
		host.Annotations[PoolCleaningModeAnnotation] = string(effectiveCleaningMode(host))
	}
	host.Spec.AutomatedCleaningMode = bmov1alpha1.AutomatedCleaningMode(mode)
}

// restorePoolCleaningMode gives host back the pool's cleaning mode, if a
// consumer changed it.
func restorePoolCleaningMode(host *bmov1alpha1.BareMetalHost) {
	pool, recorded := host.Annotations[PoolCleaningModeAnnotation]
	if !recorded {
		return
	}
	if pool != "" {
		host.Spec.AutomatedCleaningMode = bmov1alpha1.AutomatedCleaningMode(pool)
	}
	delete(host.Annotations, PoolCleaningModeAnnotation)
}

// releaseCleaning prepares host's cleaning for its deprovisioning: the
// pool's mode is back, unless the host is kept for node reuse by cluster;
// then, if that leaves its disks uncleaned where the pool would clean them,
// the host is marked for that cluster only.
func releaseCleaning(host *bmov1alpha1.BareMetalHost, keptFor string) {
	if keptFor == "" {
		restorePoolCleaningMode(host)
		return
	}
	poolMode, recorded := host.Annotations[PoolCleaningModeAnnotation]
	if recorded && effectiveCleaningMode(host) == bmov1alpha1.CleaningModeDisabled && poolMode != string(bmov1alpha1.CleaningModeDisabled) {
		host.Annotations[pool.UncleanedAnnotation] = keptFor
	}
}

// effectiveCleaningMode is host's mode, the Bare Metal Operator's default
// (metadata) when unset.
func effectiveCleaningMode(host *bmov1alpha1.BareMetalHost) bmov1alpha1.AutomatedCleaningMode {
	if host.Spec.AutomatedCleaningMode == "" {
		return bmov1alpha1.CleaningModeMetadata
	}
	return host.Spec.AutomatedCleaningMode
}
