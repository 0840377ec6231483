package remote

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

// IdentityCondition is the IdentityReady condition for the outcome of
// resolving and using identity: err is what Cache.HostAccess returned.
func IdentityCondition(identity Identity, access HostAccess, err error) metav1.Condition {
	cond := metav1.Condition{Type: infrav1.IdentityReadyCondition}
	switch ie, isIdentityErr := AsIdentityError(err); {
	case err == nil && identity.Key.IsInCluster():
		cond.Status, cond.Reason = metav1.ConditionTrue, infrav1.IdentityInClusterReason
		cond.Message = fmt.Sprintf("Using the provider's own credentials; hosts in namespace %s", identity.ObjectNamespace)
	case err == nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, infrav1.IdentityReadyReason
		cond.Message = fmt.Sprintf("Using %s; hosts in namespace %s", identity.Key, access.Namespace())
	case isIdentityErr:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ie.Reason, ie.Message
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, infrav1.IdentityUnreachableReason, err.Error()
	}
	return cond
}

// IdentityStatus reports the identity in use for an object's status.
func IdentityStatus(identity Identity, access HostAccess) *infrav1.IdentityStatus {
	status := &infrav1.IdentityStatus{Source: infrav1.IdentitySourceInCluster, HostNamespace: identity.ObjectNamespace}
	if !identity.Key.IsInCluster() {
		status.Source = infrav1.IdentitySourceSecret
		status.SecretName = identity.Key.SecretName
		status.Context = identity.Key.Context
		status.HostNamespace = ""
	}
	if access != nil {
		status.HostNamespace = access.Namespace()
	}
	return status
}
