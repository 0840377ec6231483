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
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterNamed gets the Cluster an object names, for its pause. An object
// that names none, or a Cluster not created yet, pauses through its own
// annotation only: nil is returned then.
func clusterNamed(ctx context.Context, c client.Reader, namespace, name string) (*clusterv1.Cluster, error) {
	if name == "" {
		return nil, nil
	}
	cluster := &clusterv1.Cluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("get Cluster %s/%s: %w", namespace, name, err)
	}
	return cluster, nil
}

// stampLastUpdated sets the status' lastUpdated (the upstream field users
// and tools read to tell a live object from a stale one) when a reconcile
// changed anything in the status: before is the status as read, after the
// status about to be patched.
func stampLastUpdated(before, after any, lastUpdated **metav1.Time) {
	if !equality.Semantic.DeepEqual(before, after) {
		now := metav1.Now()
		*lastUpdated = &now
	}
}
