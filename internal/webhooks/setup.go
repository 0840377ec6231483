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
