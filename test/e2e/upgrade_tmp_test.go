//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr/funcr"
	. "github.com/onsi/ginkgo/v2"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal3-io/cluster-api-provider-metal3/test/e2e/env"
)

// TEMPORARY (development only): grant what the shipped RBAC lacks.
func tmpGrant(mgmt *env.ClusterctlManagement) {
	if os.Getenv("UPGRADE_TMP_GRANT") == "" {
		return
	}
	Expect(mgmt.Client.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "tmp-grant"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"ipam.metal3.io"}, Resources: []string{"ipclaims"}, Verbs: []string{"patch"}},
			{APIGroups: []string{"ipam.cluster.x-k8s.io"}, Resources: []string{"ipaddressclaims"}, Verbs: []string{"patch"}},
		},
	})).To(Succeed())
	Expect(mgmt.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tmp-grant"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tmp-grant"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "capm3-manager", Namespace: "capm3-system"}},
	})).To(Succeed())
}

func init() {
	if os.Getenv("UPGRADE_TMP_LOG") != "" {
		clusterctllog.SetLogger(funcr.New(func(prefix, args string) {
			fmt.Fprintf(GinkgoWriter, "CLUSTERCTL %s %s %s\n", time.Now().Format("15:04:05.000"), prefix, args)
		}, funcr.Options{Verbosity: 5}))
	}
}
