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

package hostclaim

import (
	"slices"
	"strings"
)

// MirrorReboots updates hostAnnotations (in place; a nil map is allocated
// when something is added) so that the host carries the reboot annotations
// of claimAnnotations, and returns it.
//
// Each reboot annotation of the claim is put on the host once and recorded
// in MirroredRebootsAnnotation. It is not put back when it goes from the
// host while the claim still has it: BMO removes reboot annotations itself
// (e.g. a plain "reboot.metal3.io" once the host rebooted), and putting it
// back would reboot the host in a loop. When it goes from the claim, the
// binder removes it from the host, and only it: an operator's own reboot
// annotations on the host are never touched: a claim asking for a reboot
// annotation the host already carries does not take it over (it would
// then remove the operator's own when the claim drops it). The value is
// copied when the annotation is mirrored, not followed afterwards.
func MirrorReboots(claimAnnotations, hostAnnotations map[string]string) map[string]string {
	mirrored := MirroredReboots(hostAnnotations)
	var keep []string
	for _, key := range mirrored {
		if _, wanted := claimAnnotations[key]; wanted {
			keep = append(keep, key)
		} else {
			delete(hostAnnotations, key)
		}
	}
	for key, value := range claimAnnotations {
		if !IsRebootAnnotation(key) || slices.Contains(keep, key) {
			continue
		}
		if _, someoneElses := hostAnnotations[key]; someoneElses {
			continue
		}
		if hostAnnotations == nil {
			hostAnnotations = map[string]string{}
		}
		hostAnnotations[key] = value
		keep = append(keep, key)
	}
	if len(keep) == 0 {
		delete(hostAnnotations, MirroredRebootsAnnotation)
		return hostAnnotations
	}
	slices.Sort(keep)
	hostAnnotations[MirroredRebootsAnnotation] = strings.Join(keep, ",")
	return hostAnnotations
}

// MirroredReboots are the reboot annotations the binder mirrored on a host
// with these annotations.
func MirroredReboots(hostAnnotations map[string]string) []string {
	var keys []string
	for key := range strings.SplitSeq(hostAnnotations[MirroredRebootsAnnotation], ",") {
		// Only reboot annotations: whatever else the list was edited to
		// say, the binder removes nothing but its own reboots.
		if key = strings.TrimSpace(key); IsRebootAnnotation(key) {
			keys = append(keys, key)
		}
	}
	return keys
}

// UnmirrorReboots removes from hostAnnotations (in place) the reboot
// annotations the binder mirrored and its record of them: on release, a
// reboot the claim asked for must not hold off the host's next user.
func UnmirrorReboots(hostAnnotations map[string]string) {
	for _, key := range MirroredReboots(hostAnnotations) {
		delete(hostAnnotations, key)
	}
	delete(hostAnnotations, MirroredRebootsAnnotation)
}
