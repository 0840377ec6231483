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

package webhooks

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
)

// webhook is what every kind's defaulter/validator offers.
type webhook interface {
	SetupWebhookWithManager(mgr ctrl.Manager) error
}

// SetupWithManager registers every webhook of the provider.
func SetupWithManager(mgr ctrl.Manager) error {
	for _, w := range []webhook{
		&Metal3Cluster{},
		&Metal3ClusterTemplate{},
		&Metal3ClusterIdentity{},
		&Metal3Machine{},
		&Metal3MachineTemplate{},
		&Metal3DataTemplate{},
		&Metal3DataClaim{},
		&Metal3Data{},
		&Metal3Remediation{},
		&Metal3RemediationTemplate{},
	} {
		if err := w.SetupWebhookWithManager(mgr); err != nil {
			return fmt.Errorf("set up %T webhook: %w", w, err)
		}
	}
	return nil
}
