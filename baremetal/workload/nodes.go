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

// Package workload holds what the provider does in workload clusters and
// how it reaches them: Clusters connects to each through its kubeconfig
// Secret, untrusted input judged and guarded by package kubeguard; the rest
// finds the Node running on a host, gives it the machine's provider ID when
// no cloud provider does, and keeps chosen host labels on it.
package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

const (
	// LabelSyncPrefixesAnnotation, on a Metal3Cluster, lists the label
	// prefixes (comma-separated) kept in sync from each host to its Node.
	LabelSyncPrefixesAnnotation = "metal3.io/metal3-label-sync-prefixes"
)

// ErrAmbiguousNode is returned when more than one Node matches a host: the
// provider will not guess which one runs on it.
var ErrAmbiguousNode = errors.New("more than one Node matches the host")

// NodeQuery says how to recognise the Node running on one host.
type NodeQuery struct {
	// NodeName, when known (Cluster API's nodeRef of the Machine), is read
	// first: that Node is the one unless it carries another providerID.
	NodeName string
	// ProviderID is the machine's: a Node that carries another one is an
	// earlier machine's, never this one; a Node that carries it is the one,
	// whoever set it.
	ProviderID string
	// HostUID is matched against the metal3.io/uuid label.
	HostUID string
	// Hostnames, the host's names as inspection found them, are matched
	// against kubernetes.io/hostname when no Node carries the label: images
	// that do not set it still register under the host's name.
	Hostnames []string
}

// nodeListPage bounds one page of the last resort's list of every Node,
// and nodeListPages the pages: a workload cluster is the tenant's, and its
// server could hand out continue tokens without end.
const (
	nodeListPage  = 500
	nodeListPages = 100
)

// FindNode returns the Node of q, or nil while none has registered. It
// reads the workload cluster's API server, by name and by label as far as
// it can, so a cluster of thousands of Nodes costs a few small answers:
// only a Node that carries the providerID but neither label is found by
// listing them all (a kubelet started with --provider-id, as upstream
// CAPM3's templates do), page by page.
func FindNode(ctx context.Context, c client.Reader, q NodeQuery) (*corev1.Node, error) {
	if q.NodeName != "" {
		node := &corev1.Node{}
		err := c.Get(ctx, client.ObjectKey{Name: q.NodeName}, node)
		switch {
		case err == nil && q.mayBe(node):
			return node, nil
		case err != nil && !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("get Node %s: %w", q.NodeName, err)
		}
	}
	if q.HostUID != "" {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, client.MatchingLabels{pool.HostUIDLabel: q.HostUID}); err != nil {
			return nil, fmt.Errorf("list Nodes labelled %s=%s: %w", pool.HostUIDLabel, q.HostUID, err)
		}
		if node, err := one(q.candidates(nodes.Items), pool.HostUIDLabel+"="+q.HostUID); node != nil || err != nil {
			return node, err
		}
	}
	// A name that is no label value cannot be a Node's hostname label.
	hostnames := slices.DeleteFunc(slices.Clone(q.Hostnames), func(name string) bool {
		return len(validation.IsValidLabelValue(name)) > 0
	})
	if len(hostnames) > 0 {
		selector, err := labels.NewRequirement(corev1.LabelHostname, selection.In, hostnames)
		if err != nil {
			return nil, fmt.Errorf("select Nodes by hostname: %w", err)
		}
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*selector)}); err != nil {
			return nil, fmt.Errorf("list Nodes by hostname: %w", err)
		}
		var matches []corev1.Node
		for _, n := range q.candidates(nodes.Items) {
			// A Node labelled for another host is that host's, whatever its name.
			if uid, labelled := n.Labels[pool.HostUIDLabel]; labelled && uid != q.HostUID {
				continue
			}
			matches = append(matches, n)
		}
		if node, err := one(matches, corev1.LabelHostname+" in "+strings.Join(hostnames, ",")); node != nil || err != nil {
			return node, err
		}
	}
	if q.ProviderID == "" {
		return nil, nil
	}
	return findByProviderID(ctx, c, q.ProviderID)
}

// mayBe reports whether node may be q's: it carries q's providerID, or none.
func (q NodeQuery) mayBe(node *corev1.Node) bool {
	return q.ProviderID == "" || node.Spec.ProviderID == "" || node.Spec.ProviderID == q.ProviderID
}

// candidates are the nodes that may be q's; a Node that carries q's
// providerID is the only candidate.
func (q NodeQuery) candidates(nodes []corev1.Node) []corev1.Node {
	var out []corev1.Node
	for _, n := range nodes {
		if q.ProviderID != "" && n.Spec.ProviderID == q.ProviderID {
			return []corev1.Node{n}
		}
		if q.mayBe(&n) {
			out = append(out, n)
		}
	}
	return out
}

// findByProviderID lists every Node, a page at a time, for the one that
// carries providerID.
func findByProviderID(ctx context.Context, c client.Reader, providerID string) (*corev1.Node, error) {
	var matches []corev1.Node
	opts := []client.ListOption{client.Limit(nodeListPage)}
	for page := 1; ; page++ {
		if page > nodeListPages {
			return nil, fmt.Errorf("list Nodes: more than %d pages of %d", nodeListPages, nodeListPage)
		}
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, opts...); err != nil {
			return nil, fmt.Errorf("list Nodes: %w", err)
		}
		for _, n := range nodes.Items {
			if n.Spec.ProviderID == providerID {
				matches = append(matches, n)
			}
		}
		if nodes.Continue == "" {
			break
		}
		opts = []client.ListOption{client.Limit(nodeListPage), client.Continue(nodes.Continue)}
	}
	return one(matches, "providerID "+providerID)
}

func one(nodes []corev1.Node, by string) (*corev1.Node, error) {
	switch len(nodes) {
	case 0:
		return nil, nil
	case 1:
		return &nodes[0], nil
	}
	names := make([]string, 0, len(nodes))
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	return nil, fmt.Errorf("%w (%s): %s", ErrAmbiguousNode, by, strings.Join(names, ", "))
}

// LabelSyncPrefixes parses the Metal3Cluster annotation listing the label
// prefixes to sync. Invalid entries are returned apart, so the valid ones
// still apply and the user is told which ones are not.
func LabelSyncPrefixes(annotations map[string]string) (prefixes, invalid []string) {
	for _, p := range strings.Split(annotations[LabelSyncPrefixesAnnotation], ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case len(validation.IsDNS1123Subdomain(p)) > 0:
			invalid = append(invalid, p)
		case !slices.Contains(prefixes, p):
			prefixes = append(prefixes, p)
		}
	}
	return prefixes, invalid
}

// labelPrefix is the prefix of a label key ("example.com" of
// "example.com/rack"); unprefixed keys have none.
func labelPrefix(key string) string {
	prefix, _, found := strings.Cut(key, "/")
	if !found {
		return ""
	}
	return prefix
}

// SyncLabels makes node's labels under prefixes equal to host's: added,
// changed or removed. Labels under other prefixes, or without one, are
// never touched. It reports whether node changed.
func SyncLabels(node *corev1.Node, hostLabels map[string]string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return false
	}
	synced := func(key string) bool {
		p := labelPrefix(key)
		return p != "" && slices.Contains(prefixes, p)
	}
	changed := false
	for key := range node.Labels {
		if _, onHost := hostLabels[key]; synced(key) && !onHost {
			delete(node.Labels, key)
			changed = true
		}
	}
	for key, value := range hostLabels {
		if !synced(key) {
			continue
		}
		if current, ok := node.Labels[key]; ok && current == value {
			continue
		}
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[key] = value
		changed = true
	}
	return changed
}
