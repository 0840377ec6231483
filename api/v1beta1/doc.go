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

// conversion-gen reads its tag from this file only: it writes, into
// zz_generated.conversion.go, the conversions between this package and
// v1beta2 for every field the two versions share.

// +k8s:conversion-gen=github.com/metal3-io/cluster-api-provider-metal3/api/v1beta2
package v1beta1
