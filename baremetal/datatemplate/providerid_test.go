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

package datatemplate

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/render"
)

// TestMetaDataProviderID: the rendered metadata carries upstream CAPM3's
// default providerid key, equal to the provider ID the machine publishes
// without its scheme, so a kubelet configured with
// provider-id: metal3://{{ ds.meta_data.providerid }} registers with the
// machine's provider ID; a template's own providerid entry wins.
func TestMetaDataProviderID(t *testing.T) {
	host := &render.Host{Namespace: "pool-a", Name: "node-3"}
	m3m := &infrav1.Metal3Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "worker-0"}}
	for _, tt := range []struct {
		name    string
		strings []infrav1.MetaDataString
		want    string
	}{
		{name: "default", strings: []infrav1.MetaDataString{{Key: "role", Value: "worker"}},
			want: strings.TrimPrefix(hostbinding.ProviderID(types.NamespacedName{Namespace: host.Namespace, Name: host.Name}, m3m), "metal3://")},
		{name: "the template's own entry", strings: []infrav1.MetaDataString{{Key: render.ProviderIDKey, Value: "custom"}},
			want: "custom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := render.MetaData(render.Input{
				Template:  &infrav1.Metal3DataTemplateSpec{MetaData: &infrav1.MetaData{Strings: tt.strings}},
				Namespace: m3m.Namespace, Metal3Machine: m3m, Host: host,
			})
			if err != nil {
				t.Fatal(err)
			}
			values := map[string]any{}
			if err := yaml.Unmarshal(out, &values); err != nil {
				t.Fatal(err)
			}
			if values[render.ProviderIDKey] != tt.want {
				t.Errorf("providerid = %v, want %q", values[render.ProviderIDKey], tt.want)
			}
		})
	}
}
