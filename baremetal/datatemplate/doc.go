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

// Package datatemplate is what a Metal3DataTemplate does for a machine: a
// machine's Metal3DataClaim (machine_data.go), the allocation of an index
// and a Metal3Data per claim (data_template.go), and the rendering of a
// Metal3Data's metadata and network data into Secrets written next to the
// machine's host, through its identity (data.go; the pure rendering is
// package render).
package datatemplate
