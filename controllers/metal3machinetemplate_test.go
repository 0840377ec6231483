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
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// TestMachineTemplatePause: a template's automatedCleaningMode reaches the
// machines cloned from it, but not while the template carries Cluster API's
// paused annotation (upstream CAPM3 skips a paused template too); once the
// annotation goes, it does.
func TestMachineTemplatePause(t *testing.T) {
	ctx := context.Background()
	template := &infrav1.Metal3MachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "workers", Annotations: map[string]string{clusterv1.PausedAnnotation: ""}},
		Spec: infrav1.Metal3MachineTemplateSpec{Template: infrav1.Metal3MachineTemplateResource{Spec: infrav1.Metal3MachineSpec{
			AutomatedCleaningMode: "disabled",
		}}},
	}
	machine := &infrav1.Metal3Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0",
			Annotations: map[string]string{clusterv1.TemplateClonedFromNameAnnotation: "workers"}},
		Spec: infrav1.Metal3MachineSpec{AutomatedCleaningMode: "metadata"},
	}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(template, machine).Build()
	r := &Metal3MachineTemplateReconciler{Client: c}
	cleaningMode := func() string {
		t.Helper()
		got := &infrav1.Metal3Machine{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(machine), got); err != nil {
			t.Fatal(err)
		}
		return got.Spec.AutomatedCleaningMode
	}
	reconcile := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(template)}); err != nil {
			t.Fatal(err)
		}
	}

	reconcile()
	if got := cleaningMode(); got != "metadata" {
		t.Fatalf("a paused template changed its machine's automatedCleaningMode to %q", got)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(template), template); err != nil {
		t.Fatal(err)
	}
	delete(template.Annotations, clusterv1.PausedAnnotation)
	if err := c.Update(ctx, template); err != nil {
		t.Fatal(err)
	}
	reconcile()
	if got := cleaningMode(); got != "disabled" {
		t.Fatalf("automatedCleaningMode = %q once the template is unpaused, want disabled", got)
	}
}
