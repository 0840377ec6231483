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

// The data-template family is stored in this version, the conversion hub:
// v1beta1 converts to and from it.

// Hub marks Metal3DataTemplate as the conversion hub.
func (*Metal3DataTemplate) Hub() {}

// Hub marks Metal3DataTemplateList as the conversion hub.
func (*Metal3DataTemplateList) Hub() {}

// Hub marks Metal3Data as the conversion hub.
func (*Metal3Data) Hub() {}

// Hub marks Metal3DataList as the conversion hub.
func (*Metal3DataList) Hub() {}

// Hub marks Metal3DataClaim as the conversion hub.
func (*Metal3DataClaim) Hub() {}

// Hub marks Metal3DataClaimList as the conversion hub.
func (*Metal3DataClaimList) Hub() {}
