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

// Package resourceversion tells whether a cached copy of an object already
// reflects a write.
package resourceversion

import "strconv"

// NotOlder reports whether resourceVersion seen is the written one or a
// later one. Resource versions are opaque to clients, but every API server
// backed by etcd issues increasing integers, which tells a later write by
// someone else from a stale copy; anything else must match exactly.
func NotOlder(seen, written string) bool {
	s, errS := strconv.ParseUint(seen, 10, 64)
	w, errW := strconv.ParseUint(written, 10, 64)
	if errS != nil || errW != nil {
		return seen == written
	}
	return s >= w
}
