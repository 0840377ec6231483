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

// Command kustomize renders a kustomization directory to stdout as
// `kustomize build DIR` does (resources in the CLI's default, legacy,
// order), with the kustomize library of go.mod: the project has no
// kustomize binary. hack/tools-bin.sh runs it to render other projects'
// config/ the way their own release targets do.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kustomize DIR")
		os.Exit(2)
	}
	opts := krusty.MakeDefaultOptions()
	// What `kustomize build` does unless told --reorder=none.
	opts.Reorder = krusty.ReorderOptionLegacy
	resMap, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize build:", err)
		os.Exit(1)
	}
	out, err := resMap.AsYaml()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kustomize build:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(out); err != nil {
		fmt.Fprintln(os.Stderr, "kustomize build:", err)
		os.Exit(1)
	}
}
