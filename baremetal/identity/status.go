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

package identity

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
)

// Condition is the IdentityReady condition for the outcome of using id:
// err is what connecting returned; hostNamespace is where the hosts are
// when it succeeded.
func Condition(id Identity, hostNamespace string, err error) metav1.Condition {
	cond := metav1.Condition{Type: infrav1.IdentityReadyCondition}
	switch ie, isIdentityErr := AsError(err); {
	case err == nil && id.Key.IsInCluster():
		cond.Status, cond.Reason = metav1.ConditionTrue, infrav1.IdentityInClusterReason
		cond.Message = fmt.Sprintf("Using the provider's own credentials; hosts in namespace %s", id.ObjectNamespace)
	case err == nil:
		cond.Status, cond.Reason = metav1.ConditionTrue, infrav1.IdentityReadyReason
		cond.Message = fmt.Sprintf("Using %s; hosts in namespace %s", id.Key, hostNamespace)
	case isIdentityErr:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ie.Reason, ie.Message
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, infrav1.IdentityUnreachableReason, err.Error()
	}
	return cond
}

// Status reports the identity in use for an object's status; hostNamespace
// is empty while the identity's hosts cannot be reached. A
// Metal3ClusterIdentity is recorded by name, with its Secret once it is
// resolved: an object of a namespace it does not admit records only the
// name, and so is no user of the identity's connection.
func Status(id Identity, hostNamespace string) *infrav1.IdentityStatus {
	status := &infrav1.IdentityStatus{Source: infrav1.IdentitySourceInCluster, HostNamespace: id.ObjectNamespace}
	switch key := id.Key; {
	case key.IsInCluster():
	case key.ClusterIdentity != "":
		status.Source, status.IdentityName, status.HostNamespace = infrav1.IdentitySourceMetal3ClusterIdentity, key.ClusterIdentity, ""
		if key.Resolved() {
			status.SecretNamespace, status.SecretName, status.Context = key.SecretNamespace, key.SecretName, key.Context
		}
	default:
		status.Source = infrav1.IdentitySourceSecret
		status.SecretName = key.SecretName
		status.Context = key.Context
		status.HostNamespace = ""
	}
	if hostNamespace != "" {
		status.HostNamespace = hostNamespace
	}
	return status
}
