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

package v1beta2

import (
	"k8s.io/apimachinery/pkg/types"
)

// ConsumerIDAnnotation records, on a Metal3Machine or a Metal3Data, the
// identity by which the pool knows it: a host's consumerRef.uid and the
// names and owner labels of the Secrets written next to hosts. It is the
// object's UID when the provider first reconciled it. Annotations survive
// `clusterctl move` while UIDs do not, so a moved object finds its host and
// its Secrets again; UIDs are unique across management clusters, so two of
// them using identical names in one pool namespace never take each other's.
// It cannot be changed or removed once set.
const ConsumerIDAnnotation = "infrastructure.cluster.x-k8s.io/consumer-id"

// consumerIDHolder is an object that may carry ConsumerIDAnnotation.
type consumerIDHolder interface {
	GetUID() types.UID
	GetAnnotations() map[string]string
	SetAnnotations(map[string]string)
}

// ConsumerID is obj's consumer identity: its annotation, or its UID before
// the annotation is set (objects written by earlier versions).
func ConsumerID(obj consumerIDHolder) types.UID {
	if id := obj.GetAnnotations()[ConsumerIDAnnotation]; id != "" {
		return types.UID(id)
	}
	return obj.GetUID()
}

// EnsureConsumerID sets obj's ConsumerIDAnnotation to its UID if it has none
// and reports whether it did; the caller persists obj before anything in a
// pool is written under that identity.
func EnsureConsumerID(obj consumerIDHolder) bool {
	annotations := obj.GetAnnotations()
	if annotations[ConsumerIDAnnotation] != "" {
		return false
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[ConsumerIDAnnotation] = string(obj.GetUID())
	obj.SetAnnotations(annotations)
	return true
}
