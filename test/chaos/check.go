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

package chaos

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostbinding"
)

// Invariant is one property a manager killed at any instant must keep
// (DESIGN.md § Invariants 1–3 and 8).
type Invariant string

const (
	// ProvisionedOnce: each machine's host entered provisioning exactly once,
	// for that machine only; no host was provisioned twice or for nobody.
	ProvisionedOnce Invariant = "every machine provisioned exactly once"
	// BoundOnce: no host ever had two consumers, no machine was ever on two
	// hosts, and no machine names a host someone else consumes.
	BoundOnce Invariant = "no host bound twice, no machine on two hosts"
	// SecretsHaveConsumer: every Secret of ours next to a host belongs to an
	// object that exists and is used by a host.
	SecretsHaveConsumer Invariant = "no Secret of ours without its consumer"
	// SecretsOwnedByHost: a Secret of ours is owned (ownerReference) by the
	// host that uses it, so that it goes with that host and no other.
	SecretsOwnedByHost Invariant = "every Secret of ours owned by the host using it"
	// HostsClaimed: every host with a consumerRef is the recorded host of an
	// existing Metal3Machine with that consumer ID.
	HostsClaimed Invariant = "no host claimed by no machine"
	// OwnData: a host's user data is its consumer's, and its metadata was
	// rendered for its consumer.
	OwnData Invariant = "every host's user data and metadata its own consumer's"
)

// Invariants lists every invariant in the order the report prints them.
var Invariants = []Invariant{ProvisionedOnce, BoundOnce, SecretsHaveConsumer, SecretsOwnedByHost, HostsClaimed, OwnData}

// Violation is one object breaking an invariant.
type Violation struct {
	Invariant Invariant
	// Detail says what is wrong, naming the objects.
	Detail string
	// Objects are the names to look for in the provider's log.
	Objects []string
	// Log holds the provider's log lines naming Objects, with the markers
	// of each kill and restart.
	Log []string
}

// observed is the final state of a run's objects.
type observed struct {
	hosts   []bmov1alpha1.BareMetalHost
	secrets []corev1.Secret
	// machines by consumer ID; data by namespace/name.
	machines map[types.UID]*infrav1.Metal3Machine
	data     map[types.NamespacedName]*infrav1.Metal3Data
	// retired are the machines deleted during the run (by Cluster API),
	// by consumer ID.
	retired map[types.UID]string
}

// observe reads the hosts and Secrets of the pool namespaces (from pool)
// and the Metal3Machines and Metal3Data of the tenant namespaces (from
// mgmt), live.
func observe(ctx context.Context, pool, mgmt client.Reader, poolNamespaces, tenantNamespaces []string) (*observed, error) {
	o := &observed{machines: map[types.UID]*infrav1.Metal3Machine{}, data: map[types.NamespacedName]*infrav1.Metal3Data{}}
	for _, ns := range poolNamespaces {
		hosts := &bmov1alpha1.BareMetalHostList{}
		if err := pool.List(ctx, hosts, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list hosts in %s: %w", ns, err)
		}
		o.hosts = append(o.hosts, hosts.Items...)
		secrets := &corev1.SecretList{}
		if err := pool.List(ctx, secrets, client.InNamespace(ns), client.HasLabels{hostbinding.OwnerUIDLabel}); err != nil {
			return nil, fmt.Errorf("list Secrets in %s: %w", ns, err)
		}
		o.secrets = append(o.secrets, secrets.Items...)
	}
	for _, ns := range tenantNamespaces {
		machines := &infrav1.Metal3MachineList{}
		if err := mgmt.List(ctx, machines, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list Metal3Machines in %s: %w", ns, err)
		}
		for i := range machines.Items {
			m := &machines.Items[i]
			o.machines[infrav1.ConsumerID(m)] = m
		}
		data := &infrav1.Metal3DataList{}
		if err := mgmt.List(ctx, data, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("list Metal3Data in %s: %w", ns, err)
		}
		for i := range data.Items {
			o.data[client.ObjectKeyFromObject(&data.Items[i])] = &data.Items[i]
		}
	}
	return o, nil
}

// machineKey is how the provider's log names m.
func machineKey(m *infrav1.Metal3Machine) string { return m.Namespace + "/" + m.Name }

func machineName(m *infrav1.Metal3Machine) string {
	return fmt.Sprintf("Metal3Machine %s/%s (%s)", m.Namespace, m.Name, infrav1.ConsumerID(m))
}

// checkHistory checks what only the hosts' history shows: how often, and
// for whom, each host entered provisioning, and every consumer it had. A
// consumer that was deleted during the run (o.retired) and that the host
// was released by is done with the host: the host may rightly be
// provisioned for another machine afterwards, never before, and never for
// a machine that still exists and is not its last consumer. It returns the
// violations and how many machines were provisioned exactly once.
func checkHistory(records []hostRecord, o *observed) ([]Violation, int) {
	var out []Violation
	episodesOf := map[types.UID][]string{}
	hostsOf := map[types.UID][]string{}
	for _, r := range records {
		host := r.host.String()
		done := func(uid types.UID) bool { _, retired := o.retired[uid]; return retired && r.releasedFrom.Has(uid) }
		// Each consumer at most once, and all but the last done with it.
		perConsumer := map[types.UID]int{}
		for _, e := range r.episodes {
			perConsumer[e.consumerUID]++
		}
		if len(r.episodes) > 1 && (len(perConsumer) < len(r.episodes) ||
			slices.ContainsFunc(r.episodes[:len(r.episodes)-1], func(e episode) bool { return !done(e.consumerUID) })) {
			var what []string
			for _, e := range r.episodes {
				what = append(what, fmt.Sprintf("for %s at %s", e.consumer, e.at.Format("15:04:05.000")))
			}
			out = append(out, Violation{Invariant: ProvisionedOnce, Objects: []string{r.host.Name},
				Detail: fmt.Sprintf("host %s entered provisioning %d times: %s", host, len(r.episodes), strings.Join(what, "; "))})
		}
		for _, e := range r.episodes {
			if _, ok := o.machines[e.consumerUID]; !ok && !done(e.consumerUID) {
				out = append(out, Violation{Invariant: ProvisionedOnce, Objects: []string{r.host.Name},
					Detail: fmt.Sprintf("host %s was provisioned for %q, which is no Metal3Machine", host, e.consumer)})
				continue
			}
			episodesOf[e.consumerUID] = append(episodesOf[e.consumerUID], host)
		}
		var current []types.UID
		for uid := range r.consumers {
			if !done(uid) {
				current = append(current, uid)
			}
		}
		if len(current) > 1 {
			objects := []string{r.host.Name}
			var names []string
			for _, name := range r.consumers {
				names = append(names, name)
				objects = append(objects, strings.Fields(name)[0])
			}
			sort.Strings(names)
			out = append(out, Violation{Invariant: BoundOnce, Objects: objects,
				Detail: fmt.Sprintf("host %s was bound to %d consumers: %s", host, len(names), strings.Join(names, ", "))})
		}
		for uid := range r.consumers {
			hostsOf[uid] = append(hostsOf[uid], host)
		}
	}
	for uid, name := range o.retired {
		if hosts := episodesOf[uid]; len(hosts) > 1 {
			out = append(out, Violation{Invariant: ProvisionedOnce, Objects: append([]string{strings.Fields(name)[0]}, hosts...),
				Detail: fmt.Sprintf("Metal3Machine %s, deleted during the run, was provisioned %d times (hosts: %v)", name, len(hosts), hosts)})
		}
		if hosts := hostsOf[uid]; len(hosts) > 1 {
			out = append(out, Violation{Invariant: BoundOnce, Objects: append([]string{strings.Fields(name)[0]}, hosts...),
				Detail: fmt.Sprintf("Metal3Machine %s, deleted during the run, was the consumer of %d hosts: %v", name, len(hosts), hosts)})
		}
	}
	once := 0
	for uid, m := range o.machines {
		switch n := len(episodesOf[uid]); n {
		case 1:
			once++
		default:
			out = append(out, Violation{Invariant: ProvisionedOnce, Objects: append([]string{machineKey(m)}, episodesOf[uid]...),
				Detail: fmt.Sprintf("%s was provisioned %d times (hosts: %v)", machineName(m), n, episodesOf[uid])})
		}
		if hosts := hostsOf[uid]; len(hosts) > 1 {
			out = append(out, Violation{Invariant: BoundOnce, Objects: append([]string{machineKey(m)}, hosts...),
				Detail: fmt.Sprintf("%s was the consumer of %d hosts: %v", machineName(m), len(hosts), hosts)})
		}
	}
	return out, once
}

// checkState checks the final state: who each host is claimed by, whether
// its machine knows it, and whose its Secrets are.
func checkState(o *observed) []Violation {
	var out []Violation
	usedBy := map[types.NamespacedName][]*bmov1alpha1.BareMetalHost{}
	for i := range o.hosts {
		host := &o.hosts[i]
		for _, ref := range []*corev1.SecretReference{host.Spec.UserData, host.Spec.MetaData, host.Spec.NetworkData} {
			if ref != nil {
				key := types.NamespacedName{Namespace: host.Namespace, Name: ref.Name}
				usedBy[key] = append(usedBy[key], host)
			}
		}
		out = append(out, checkHost(host, o)...)
	}
	for i := range o.machines {
		m := o.machines[i]
		recorded := m.Annotations[infrav1.HostAnnotation]
		if recorded == "" || !infrav1.HostRecordConfirmed(m) {
			continue // an intent names the host the machine is about to claim
		}
		if !consumedBy(o.hosts, recorded, infrav1.ConsumerID(m)) {
			out = append(out, Violation{Invariant: BoundOnce, Objects: []string{machineKey(m), recorded},
				Detail: fmt.Sprintf("%s records host %s, which it does not consume", machineName(m), recorded)})
		}
	}
	for i := range o.secrets {
		out = append(out, checkSecret(&o.secrets[i], usedBy, o)...)
	}
	return out
}

func consumedBy(hosts []bmov1alpha1.BareMetalHost, hostKey string, consumer types.UID) bool {
	for i := range hosts {
		h := &hosts[i]
		if h.Namespace+"/"+h.Name == hostKey {
			return h.Spec.ConsumerRef != nil && h.Spec.ConsumerRef.UID == consumer
		}
	}
	return false
}

// checkHost checks that host's claim is a machine's and that the Secrets it
// is given are that machine's.
func checkHost(host *bmov1alpha1.BareMetalHost, o *observed) []Violation {
	ref := host.Spec.ConsumerRef
	if ref == nil {
		return nil
	}
	name := fmt.Sprintf("%s/%s", host.Namespace, host.Name)
	m := o.machines[ref.UID]
	switch {
	case m == nil || m.Namespace != ref.Namespace || m.Name != ref.Name:
		return []Violation{{Invariant: HostsClaimed, Objects: []string{host.Name, ref.Namespace + "/" + ref.Name},
			Detail: fmt.Sprintf("host %s is claimed by %s/%s (%s), which is no Metal3Machine", name, ref.Namespace, ref.Name, ref.UID)}}
	case m.Annotations[infrav1.HostAnnotation] != name:
		return []Violation{{Invariant: HostsClaimed, Objects: []string{host.Name, machineKey(m)},
			Detail: fmt.Sprintf("host %s is claimed by %s, which records host %q", name, machineName(m), m.Annotations[infrav1.HostAnnotation])}}
	}
	var out []Violation
	foreign := func(what, detail string, objects ...string) {
		out = append(out, Violation{Invariant: OwnData, Objects: append([]string{host.Name, machineKey(m)}, objects...),
			Detail: fmt.Sprintf("host %s of %s: %s %s", name, machineName(m), what, detail)})
	}
	if host.Spec.UserData == nil {
		foreign("user data", "is not set")
	} else if secret := findSecret(o.secrets, host.Namespace, host.Spec.UserData.Name); secret == nil {
		foreign("user data", fmt.Sprintf("Secret %s is not one of ours", host.Spec.UserData.Name), host.Spec.UserData.Name)
	} else if secret.Labels[hostbinding.OwnerUIDLabel] != string(ref.UID) ||
		secret.Annotations[hostbinding.OwnerAnnotation] != fmt.Sprintf("Metal3Machine %s/%s", m.Namespace, m.Name) {
		foreign("user data", fmt.Sprintf("Secret %s belongs to %q (%s)", secret.Name,
			secret.Annotations[hostbinding.OwnerAnnotation], secret.Labels[hostbinding.OwnerUIDLabel]), secret.Name)
	}
	switch {
	case host.Spec.MetaData == nil && hostbinding.UsesDataTemplate(m):
		foreign("metadata", "is not set")
	case host.Spec.MetaData == nil:
		// Plain user data only: nothing is rendered for the machine.
	case !hostbinding.UsesDataTemplate(m):
		foreign("metadata", fmt.Sprintf("Secret %s is set, but the machine renders none", host.Spec.MetaData.Name), host.Spec.MetaData.Name)
	default:
		if problem := metaDataProblem(o, host.Namespace, host.Spec.MetaData.Name, m); problem != "" {
			foreign("metadata", problem, host.Spec.MetaData.Name)
		}
	}
	return out
}

// metaDataProblem says why the metadata Secret name in namespace is not
// m's: it must be written for the Metal3Data of m's claim and name m's
// Machine, as the template renders it.
func metaDataProblem(o *observed, namespace, name string, m *infrav1.Metal3Machine) string {
	secret := findSecret(o.secrets, namespace, name)
	if secret == nil {
		return fmt.Sprintf("Secret %s is not one of ours", name)
	}
	kind, owner, _ := strings.Cut(secret.Annotations[hostbinding.OwnerAnnotation], " ")
	dataNamespace, dataName, _ := strings.Cut(owner, "/")
	data := o.data[types.NamespacedName{Namespace: dataNamespace, Name: dataName}]
	switch {
	case kind != "Metal3Data" || data == nil:
		return fmt.Sprintf("Secret %s belongs to %q, not to a Metal3Data", name, secret.Annotations[hostbinding.OwnerAnnotation])
	case data.Namespace != m.Namespace || data.Spec.Claim.Name != m.Name:
		return fmt.Sprintf("Secret %s belongs to Metal3Data %s/%s of claim %s", name, data.Namespace, data.Name, data.Spec.Claim.Name)
	}
	var rendered map[string]any
	if err := yaml.Unmarshal(secret.Data["metaData"], &rendered); err != nil {
		return fmt.Sprintf("Secret %s holds no metadata: %v", name, err)
	}
	if machine := owningMachine(m); rendered["name"] != machine {
		return fmt.Sprintf("Secret %s renders name %v, the Machine is %q", name, rendered["name"], machine)
	}
	return ""
}

// owningMachine is the name of m's Machine.
func owningMachine(m *infrav1.Metal3Machine) string {
	for _, ref := range m.OwnerReferences {
		if ref.Kind == "Machine" {
			return ref.Name
		}
	}
	return ""
}

func findSecret(secrets []corev1.Secret, namespace, name string) *corev1.Secret {
	for i := range secrets {
		if secrets[i].Namespace == namespace && secrets[i].Name == name {
			return &secrets[i]
		}
	}
	return nil
}

// checkSecret checks that a Secret of ours belongs to an existing object,
// is used by a host, and is owned by that host.
func checkSecret(secret *corev1.Secret, usedBy map[types.NamespacedName][]*bmov1alpha1.BareMetalHost, o *observed) []Violation {
	key := client.ObjectKeyFromObject(secret)
	label, annotation := secret.Labels[hostbinding.OwnerUIDLabel], secret.Annotations[hostbinding.OwnerAnnotation]
	orphan := func(detail string) []Violation {
		return []Violation{{Invariant: SecretsHaveConsumer, Objects: []string{secret.Name},
			Detail: fmt.Sprintf("Secret %s (of %q, consumer ID %s) %s", key, annotation, label, detail)}}
	}
	kind, owner, _ := strings.Cut(annotation, " ")
	ownerNamespace, ownerName, _ := strings.Cut(owner, "/")
	switch kind {
	case "Metal3Machine":
		m := o.machines[types.UID(label)]
		if m == nil || m.Namespace != ownerNamespace || m.Name != ownerName {
			return orphan("belongs to no existing Metal3Machine")
		}
	case "Metal3Data":
		data := o.data[types.NamespacedName{Namespace: ownerNamespace, Name: ownerName}]
		if data == nil || string(infrav1.ConsumerID(data)) != label {
			return orphan("belongs to no existing Metal3Data")
		}
	default:
		return orphan("names no owner the provider writes for")
	}
	hosts := usedBy[key]
	if len(hosts) == 0 {
		return orphan("is used by no host")
	}
	var out []Violation
	for _, host := range hosts {
		owned := false
		for _, ref := range secret.OwnerReferences {
			owned = owned || ref.UID == host.UID
		}
		if !owned {
			var owners []string
			for _, ref := range secret.OwnerReferences {
				owners = append(owners, fmt.Sprintf("%s %s (%s)", ref.Kind, ref.Name, ref.UID))
			}
			out = append(out, Violation{Invariant: SecretsOwnedByHost, Objects: []string{secret.Name, host.Name},
				Detail: fmt.Sprintf("Secret %s is used by host %s/%s (%s) but owned by %v", key, host.Namespace, host.Name, host.UID, owners)})
		}
	}
	return out
}
