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

package v1beta2

// Every kind of this package is the conversion hub of its kind: the other
// served versions convert to and from it.

// Hub marks Metal3Cluster as the conversion hub.
func (*Metal3Cluster) Hub() {}

// Hub marks Metal3ClusterList as the conversion hub.
func (*Metal3ClusterList) Hub() {}

// Hub marks Metal3ClusterTemplate as the conversion hub.
func (*Metal3ClusterTemplate) Hub() {}

// Hub marks Metal3ClusterTemplateList as the conversion hub.
func (*Metal3ClusterTemplateList) Hub() {}

// Hub marks Metal3Machine as the conversion hub.
func (*Metal3Machine) Hub() {}

// Hub marks Metal3MachineList as the conversion hub.
func (*Metal3MachineList) Hub() {}

// Hub marks Metal3MachineTemplate as the conversion hub.
func (*Metal3MachineTemplate) Hub() {}

// Hub marks Metal3MachineTemplateList as the conversion hub.
func (*Metal3MachineTemplateList) Hub() {}

// Hub marks Metal3Remediation as the conversion hub.
func (*Metal3Remediation) Hub() {}

// Hub marks Metal3RemediationList as the conversion hub.
func (*Metal3RemediationList) Hub() {}

// Hub marks Metal3RemediationTemplate as the conversion hub.
func (*Metal3RemediationTemplate) Hub() {}

// Hub marks Metal3RemediationTemplateList as the conversion hub.
func (*Metal3RemediationTemplateList) Hub() {}

// Hub marks Metal3ClusterIdentity as the conversion hub.
func (*Metal3ClusterIdentity) Hub() {}

// Hub marks Metal3ClusterIdentityList as the conversion hub.
func (*Metal3ClusterIdentityList) Hub() {}
