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

// Command release renders the provider's clusterctl release artifacts into a
// directory: `make release-manifests` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/metal3-io/cluster-api-provider-metal3/internal/release"
)

func main() {
	opts := release.Options{}
	flag.StringVar(&opts.Root, "root", ".", "The repository's top directory.")
	flag.StringVar(&opts.OutDir, "out", "out", "Directory the artifacts are written to.")
	flag.StringVar(&opts.Image, "image", "", "Manager image reference (registry/name:tag); empty keeps config/default's.")
	flag.Parse()

	names, err := release.Build(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
	for _, name := range names {
		fmt.Printf("%s/%s\n", opts.OutDir, name)
	}
}
