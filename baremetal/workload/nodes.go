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

// Package workload holds what the provider does to the Nodes of a workload
// cluster: find the Node running on a host, give it the machine's provider
// ID when no cloud provider does, and keep chosen host labels on it.
package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// HostUIDLabel is the label the node's image sets from the host's
	// metadata (metal3.io/uuid = BareMetalHost UID): how a Node is matched
	// to its host when no cloud provider does it.
	HostUIDLabel = "metal3.io/uuid"
	// LabelSyncPrefixesAnnotation, on a Metal3Cluster, lists the label
	// prefixes (comma-separated) kept in sync from each host to its Node.
	LabelSyncPrefixesAnnotation = "metal3.io/metal3-label-sync-prefixes"
)

// ErrAmbiguousNode is returned when more than one Node matches a host: the
// provider will not guess which one runs on it.
var ErrAmbiguousNode = errors.New("more than one Node matches the host")

// NodeQuery says how to recognise the Node running on one host.
type NodeQuery struct {
	// ProviderID, when set, is matched first against spec.providerID: a
	// Node that already carries it is the one, whoever set it.
	ProviderID string
	// HostUID is matched against the metal3.io/uuid label.
	HostUID string
	// Hostnames, the host's names as inspection found them, are matched
	// against kubernetes.io/hostname when no Node carries the label: images
	// that do not set it still register under the host's name.
	Hostnames []string
}

// FindNode returns the Node of q, or nil while none has registered.
func FindNode(ctx context.Context, c client.Reader, q NodeQuery) (*corev1.Node, error) {
	if q.ProviderID != "" {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes); err != nil {
			return nil, fmt.Errorf("list Nodes: %w", err)
		}
		var matches []corev1.Node
		for _, n := range nodes.Items {
			if n.Spec.ProviderID == q.ProviderID {
				matches = append(matches, n)
			}
		}
		if node, err := one(matches, "providerID "+q.ProviderID); node != nil || err != nil {
			return node, err
		}
	}
	if q.HostUID != "" {
		nodes := &corev1.NodeList{}
		if err := c.List(ctx, nodes, client.MatchingLabels{HostUIDLabel: q.HostUID}); err != nil {
			return nil, fmt.Errorf("list Nodes labelled %s=%s: %w", HostUIDLabel, q.HostUID, err)
		}
		if node, err := one(nodes.Items, HostUIDLabel+"="+q.HostUID); node != nil || err != nil {
			return node, err
		}
	}
	if len(q.Hostnames) == 0 {
		return nil, nil
	}
	nodes := &corev1.NodeList{}
	if err := c.List(ctx, nodes, client.HasLabels{corev1.LabelHostname}); err != nil {
		return nil, fmt.Errorf("list Nodes by hostname: %w", err)
	}
	var matches []corev1.Node
	for _, n := range nodes.Items {
		// A Node labelled for another host is that host's, whatever its name.
		if uid, labelled := n.Labels[HostUIDLabel]; labelled && uid != q.HostUID {
			continue
		}
		if slices.Contains(q.Hostnames, n.Labels[corev1.LabelHostname]) {
			matches = append(matches, n)
		}
	}
	return one(matches, corev1.LabelHostname+" in "+strings.Join(q.Hostnames, ","))
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
