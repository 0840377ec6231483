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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// kubeconfigSecretReader is the Secret reader of the workload ClusterCache.
// It asks the metadata cache whether a Secret exists before reading it from
// the API server (Secrets' data is never cached).
//
// Why: the ClusterCache retries a cluster it cannot connect to every 30
// seconds, reading <cluster>-kubeconfig each time. A cluster that has none
// (no control plane provider created it yet, or none ever will) would cost
// two API requests a minute for as long as it exists; answered from the
// cache, it costs none, and the Secret is read as soon as it appears.
type kubeconfigSecretReader struct {
	// Metadata reads PartialObjectMetadata of Secrets from the informer
	// the Metal3Machine controller already runs for bootstrap data.
	Metadata client.Reader
	// API reads the Secret itself.
	API client.Reader
}

func (r *kubeconfigSecretReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := r.Metadata.Get(ctx, key, meta); err != nil {
		return err
	}
	return r.API.Get(ctx, key, obj, opts...)
}

func (r *kubeconfigSecretReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.API.List(ctx, list, opts...)
}
