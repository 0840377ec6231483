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

package pool

import (
	"crypto/sha256"
	"encoding/hex"
)

// Marks on hosts that decide whether they may be taken.
const (
	// UnhealthyAnnotation marks a host that must not be taken: set by
	// remediation when it gives up, or by an operator, with the name
	// upstream CAPM3 writes since v1.13, so a pool shared with it agrees.
	// Only its presence counts (UnhealthyMark).
	UnhealthyAnnotation = "capm3.metal3.io/unhealthy"
	// DeprecatedUnhealthyAnnotation is the mark's name before upstream
	// v1.13, which upstream still honours: hosts marked by older releases
	// of either provider, or by operators following older guides, stay out
	// of the pool. Nothing here writes it, and nothing removes it.
	DeprecatedUnhealthyAnnotation = "capi.metal3.io/unhealthy"
	// UnhealthyValue is the value written with UnhealthyAnnotation:
	// upstream's, so a pool admin reading a host cannot tell which
	// provider marked it, and need not.
	UnhealthyValue = "capm3/UnhealthyNode"
	// FailureDomainLabel puts a host in a failure domain: a consumer of a
	// failure domain prefers its hosts.
	FailureDomainLabel = "infrastructure.cluster.x-k8s.io/failure-domain"
	// UncleanedAnnotation marks a host deprovisioned without the cleaning
	// its pool asks for: its consumer disabled cleaning and kept the host
	// for node reuse, as upstream CAPM3 lets a MachineDeployment keep its
	// disks across an upgrade. The value is the cluster
	// ("<namespace>/<cluster name>") whose data may be on its disks: only
	// that cluster's machines may take it, until the pool admin, having
	// cleaned it, removes the annotation.
	UncleanedAnnotation = "infrastructure.cluster.x-k8s.io/uncleaned-for"
	// HostUIDLabel is the label a node's image sets from its host's
	// metadata (metal3.io/uuid = the BareMetalHost's UID): how the Node of
	// a host is found in its workload cluster.
	HostUIDLabel = "metal3.io/uuid"
)

// Purposes of the Secrets written next to a host for its consumer: they
// end the Secret's name.
const (
	UserDataPurpose    = "user-data"
	MetaDataPurpose    = "metadata"
	NetworkDataPurpose = "network-data"
)

// maxReadableName bounds the readable part of a hashed name, so that with
// a purpose and the hash it stays a valid object name (253 characters).
const maxReadableName = 200

// HashedName is "<readable>[-<purpose>]-<10 hex of sha256(unique)>": the
// name of something written in a pool namespace for a consumer. The hash
// of the consumer's unique ID tells apart consumers of the same name from
// different tenants and management clusters sharing the namespace (and a
// consumer from an earlier one of the same name); the readable part, cut
// to keep the name valid, helps people find it.
func HashedName(readable, purpose, unique string) string {
	sum := sha256.Sum256([]byte(unique))
	if len(readable) > maxReadableName {
		readable = readable[:maxReadableName]
	}
	if purpose != "" {
		readable += "-" + purpose
	}
	return readable + "-" + hex.EncodeToString(sum[:])[:10]
}
