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
