#!/usr/bin/env bash
# Copyright The Metal3 Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Builds the binaries the tests run but the Go proxy cannot hand us ready-made:
#
#   envtest  kube-apiserver (k8s.io/kubernetes) and etcd (go.etcd.io/etcd/server/v3),
#            the assets controller-runtime's envtest starts. setup-envtest cannot
#            download on our machines, so we build them from module sources.
#   bmo      the Bare Metal Operator, for end-to-end tests that want the real thing,
#            with its CRDs (in crds/ beside the binary).
#   ipam     the Metal3 IP Address Manager, likewise with its CRDs in crds/.
#   incluster-ipam  the CAPI in-cluster IPAM provider, with its pool CRDs in crds/.
#   cert-manager-crds  cert-manager's CRDs (no binary: its commands are not on the
#            proxy), for tests where clusterctl must find cert-manager's API.
#   upstream-capm3-crds  upstream CAPM3's CRDs, for tests that switch what an
#            upstream CAPM3 left behind over to this provider.
#   upstream-capm3  upstream CAPM3 as its users install it, for upgrade tests
#            (`clusterctl init` the upstream release, then `clusterctl upgrade`
#            to this tree's) and comparisons with this provider: its manager
#            binary (upstream-capm3-manager), its CRDs in crds/, and its
#            release as clusterctl reads it from a local repository,
#            repository/infrastructure-metal3/<version>/ with
#            infrastructure-components.yaml (upstream's config/ rendered as its
#            `make release` does), upstream's own metadata.yaml and its
#            cluster template. test/testenv/upstream.go hands them to tests.
#   upstream-capm3-source  no build: upstream CAPM3's source tree at that
#            release, as the Go module cache holds it, for tests that compare
#            with upstream's cluster template and Tilt files.
#
# Each binary lands in a per-user cache directory keyed by its version, so a
# second run finds it and builds nothing. The directory is printed on stdout
# (envtest: the value for KUBEBUILDER_ASSETS); progress goes to stderr.
#
# Usage: hack/tools-bin.sh envtest|bmo|ipam|incluster-ipam|cert-manager-crds|upstream-capm3-crds|upstream-capm3|upstream-capm3-source
set -euo pipefail

KUBERNETES_VERSION="${KUBERNETES_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.6}"
BMO_VERSION="${BMO_VERSION:-v0.13.2}"
BMO_APIS_VERSION="${BMO_APIS_VERSION:-v0.13.2}"
BMO_HARDWAREUTILS_VERSION="${BMO_HARDWAREUTILS_VERSION:-v0.13.1}"
IRSO_API_VERSION="${IRSO_API_VERSION:-v0.8.0}"
IPAM_VERSION="${IPAM_VERSION:-v1.13.1}"
IPAM_API_VERSION="${IPAM_API_VERSION:-v1.13.1}"
# v1.1.0 is the newest release on the proxy and the first that speaks
# ipam.cluster.x-k8s.io/v1beta2, the version CAPI v1.14 CRDs store.
INCLUSTER_IPAM_VERSION="${INCLUSTER_IPAM_VERSION:-v1.1.0}"
UPSTREAM_CAPM3_VERSION="${UPSTREAM_CAPM3_VERSION:-v1.13.2}"
# Upstream CAPM3's api module, tagged with each release; the main module's
# go.mod points it at ./api, which does not apply to it as a dependency.
UPSTREAM_CAPM3_API_VERSION="${UPSTREAM_CAPM3_API_VERSION:-${UPSTREAM_CAPM3_VERSION}}"
# The manager image upstream's `make release` writes into its components.
UPSTREAM_CAPM3_IMAGE="${UPSTREAM_CAPM3_IMAGE:-quay.io/metal3-io/cluster-api-provider-metal3}"
# The version clusterctl v1.14 installs by default.
CERT_MANAGER_VERSION="${CERT_MANAGER_VERSION:-v1.21.1}"

CACHE_ROOT="${CAPM3_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capm3-tools}"
# The repository, whose hack/kustomize renders kustomizations (upstream-capm3).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

log() { echo "tools-bin: $*" >&2; }

# staging_version maps a kubernetes release (v1.X.Y) to its staging modules' tag (v0.X.Y).
staging_version() { echo "v0.${1#v1.}"; }

SCRATCH_DIRS=()
cleanup() { [ ${#SCRATCH_DIRS[@]} -eq 0 ] || rm -rf "${SCRATCH_DIRS[@]}"; }
trap cleanup EXIT

# new_scratch_module sets SCRATCH to a fresh, empty throw-away module
# directory, removed when the script exits. Builds happen outside the
# repository so the project's go.mod never sees these (large, partly
# unverifiable) dependency graphs.
new_scratch_module() {
	SCRATCH="$(mktemp -d "${TMPDIR:-/tmp}/capm3-tools.XXXXXX")"
	SCRATCH_DIRS+=("$SCRATCH")
	(cd "$SCRATCH" && go mod init capm3.local/tools >/dev/null 2>&1)
}

build_kube_apiserver() {
	local out="$1" dir gomod staging
	new_scratch_module
	dir="$SCRATCH"
	staging="$(staging_version "$KUBERNETES_VERSION")"
	gomod="$(cd "$dir" && go mod download -json "k8s.io/kubernetes@${KUBERNETES_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
	[ -n "$gomod" ] || { log "cannot download k8s.io/kubernetes@${KUBERNETES_VERSION}"; return 1; }
	# k8s.io/kubernetes replaces every staging module with a directory inside its
	# own tree; as a dependency those replaces do not apply, so we point each one
	# at its published release instead.
	{
		echo "require k8s.io/kubernetes ${KUBERNETES_VERSION}"
		grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" |
			awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
	} >>"$dir/go.mod"
	log "building kube-apiserver ${KUBERNETES_VERSION} (first build takes several minutes)"
	# The version a release build stamps in; without it the server reports
	# v0.0.0-master, which clients that check versions (clusterctl) refuse.
	local minor="${KUBERNETES_VERSION#v1.}"
	minor="${minor%%.*}"
	local version_pkg=k8s.io/component-base/version
	local ldflags="-X ${version_pkg}.gitVersion=${KUBERNETES_VERSION} -X ${version_pkg}.gitMajor=1 -X ${version_pkg}.gitMinor=${minor} -X ${version_pkg}.gitTreeState=clean"
	(cd "$dir" && go get "k8s.io/kubernetes/cmd/kube-apiserver@${KUBERNETES_VERSION}" >&2 &&
		CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out" k8s.io/kubernetes/cmd/kube-apiserver >&2)
}

build_etcd() {
	local out="$1" dir
	new_scratch_module
	dir="$SCRATCH"
	log "building etcd ${ETCD_VERSION}"
	(cd "$dir" && go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2 &&
		CGO_ENABLED=0 go build -trimpath -o "$out" go.etcd.io/etcd/server/v3 >&2)
}

# build_controller builds the main package at the root of module@version,
# from the throw-away module in $SCRATCH, into $out, and ships the CRDs the
# module keeps in crd_dir in crds/ beside it: tests install the CRDs that
# match the binary. Extra environment (e.g. GONOSUMDB) comes from the caller.
build_controller() {
	local out="$1" module="$2" version="$3" crd_dir="$4"
	log "building ${module} ${version}"
	(cd "$SCRATCH" && export GOFLAGS=-mod=mod &&
		go get "${module}@${version}" >&2 &&
		CGO_ENABLED=0 go build -trimpath -o "$out" "$module" >&2 &&
		src="$(go list -m -f '{{.Dir}}' "$module")/${crd_dir}" &&
		rm -rf "$(dirname "$out")/crds" && mkdir -p "$(dirname "$out")/crds" &&
		cp "$src"/*.yaml "$(dirname "$out")/crds/" && chmod -R u+w "$(dirname "$out")/crds")
}

build_bmo() {
	new_scratch_module
	cat >>"$SCRATCH/go.mod" <<EOF
require github.com/metal3-io/baremetal-operator ${BMO_VERSION}
replace github.com/metal3-io/baremetal-operator/apis => github.com/metal3-io/baremetal-operator/apis ${BMO_APIS_VERSION}
replace github.com/metal3-io/baremetal-operator/pkg/hardwareutils => github.com/metal3-io/baremetal-operator/pkg/hardwareutils ${BMO_HARDWAREUTILS_VERSION}
replace github.com/metal3-io/ironic-standalone-operator/api => github.com/metal3-io/ironic-standalone-operator/api ${IRSO_API_VERSION}
EOF
	# The checksum database has no entries for some metal3-io modules. Skipping it
	# is scoped to this throw-away build; the project's go.mod stays verified.
	GONOSUMDB=github.com/metal3-io build_controller "$1" github.com/metal3-io/baremetal-operator "$BMO_VERSION" config/base/crds/bases
}

build_ipam() {
	new_scratch_module
	# The IPAM's go.mod points its api module at ./api, a replace that does not
	# apply to it as a dependency; pin the published api of the release instead.
	cat >>"$SCRATCH/go.mod" <<EOF
require github.com/metal3-io/ip-address-manager ${IPAM_VERSION}
replace github.com/metal3-io/ip-address-manager/api => github.com/metal3-io/ip-address-manager/api ${IPAM_API_VERSION}
EOF
	# As for the BMO: no checksum database entries, skipped only for this build.
	GONOSUMDB=github.com/metal3-io build_controller "$1" github.com/metal3-io/ip-address-manager "$IPAM_VERSION" config/crd/bases
}

build_incluster_ipam() {
	new_scratch_module
	# The module is in the checksum database, so nothing skips it. All four
	# pool CRDs ship: the manager watches the prefix pools too and serves no
	# claim at all without their CRDs.
	build_controller "$1" sigs.k8s.io/cluster-api-ipam-provider-in-cluster "$INCLUSTER_IPAM_VERSION" config/crd/bases
}

# fetch_cert_manager_crds copies the CRDs of the cert-manager module into
# $1/crds; $1 is a temporary directory that ensure_dir renames into place.
fetch_cert_manager_crds() {
	local out="$1" src
	new_scratch_module
	log "downloading cert-manager ${CERT_MANAGER_VERSION} CRDs"
	src="$(cd "$SCRATCH" && go mod download -json "github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$src" ] || { log "cannot download github.com/cert-manager/cert-manager@${CERT_MANAGER_VERSION}"; return 1; }
	mkdir -p "$out/crds"
	cp "$src"/deploy/crds/*.yaml "$out/crds/"
	chmod -R u+w "$out"
}

# fetch_upstream_capm3_crds copies the CRDs of upstream CAPM3 into $1/crds:
# tests that switch objects an upstream CAPM3 wrote over to this provider
# start from upstream's own schemas.
fetch_upstream_capm3_crds() {
	local out="$1" src
	new_scratch_module
	log "downloading upstream CAPM3 ${UPSTREAM_CAPM3_VERSION} CRDs"
	# As for the BMO: no checksum database entries, skipped only for this download.
	src="$(cd "$SCRATCH" && GONOSUMDB=github.com/metal3-io go mod download -json "github.com/metal3-io/cluster-api-provider-metal3@${UPSTREAM_CAPM3_VERSION}" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$src" ] || { log "cannot download github.com/metal3-io/cluster-api-provider-metal3@${UPSTREAM_CAPM3_VERSION}"; return 1; }
	mkdir -p "$out/crds"
	cp "$src"/config/crd/bases/*.yaml "$out/crds/"
	chmod -R u+w "$out"
}

build_upstream_capm3() {
	new_scratch_module
	cat >>"$SCRATCH/go.mod" <<EOF
require github.com/metal3-io/cluster-api-provider-metal3 ${UPSTREAM_CAPM3_VERSION}
replace github.com/metal3-io/cluster-api-provider-metal3/api => github.com/metal3-io/cluster-api-provider-metal3/api ${UPSTREAM_CAPM3_API_VERSION}
EOF
	# As for the BMO: no checksum database entries, skipped only for this build.
	# Every other dependency is at the version upstream's go.mod pins (the BMO
	# apis at v0.13.2 for v1.13.2): nothing else in the scratch module asks
	# for more.
	GONOSUMDB=github.com/metal3-io build_controller "$1" github.com/metal3-io/cluster-api-provider-metal3 "$UPSTREAM_CAPM3_VERSION" config/crd/bases
}

# render_upstream_capm3_release writes upstream CAPM3's release into $1 as
# upstream's `make release` does: set-manifest-image (the same sed, on a
# copy of config/) points the manager at the release's image, then
# release-manifests renders config/default (`kustomize build`; here
# hack/kustomize, the kustomize library of our go.mod) and copies
# metadata.yaml and the cluster template beside it. clusterctl's variables
# (${CAPM3_DIAGNOSTICS_ADDRESS:=:8443}, ...) stay for clusterctl to fill in.
render_upstream_capm3_release() {
	local out="$1" src
	new_scratch_module
	log "rendering upstream CAPM3 ${UPSTREAM_CAPM3_VERSION} release"
	src="$(cd "$SCRATCH" && GONOSUMDB=github.com/metal3-io go mod download -json "github.com/metal3-io/cluster-api-provider-metal3@${UPSTREAM_CAPM3_VERSION}" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$src" ] || { log "cannot download github.com/metal3-io/cluster-api-provider-metal3@${UPSTREAM_CAPM3_VERSION}"; return 1; }
	cp -R "$src/config" "$SCRATCH/config"
	chmod -R u+w "$SCRATCH/config"
	sed -i'' -e 's@image: .*@image: "'"${UPSTREAM_CAPM3_IMAGE}:${UPSTREAM_CAPM3_VERSION}"'"@' "$SCRATCH/config/default/capm3/manager_image_patch.yaml"
	mkdir -p "$out"
	(cd "$ROOT" && go run ./hack/kustomize "$SCRATCH/config/default") >"$out/infrastructure-components.yaml"
	cp "$src/metadata.yaml" "$out/metadata.yaml"
	cp "$src/examples/clusterctl-templates/clusterctl-cluster.yaml" "$out/cluster-template.yaml"
	cp "$src/examples/clusterctl-templates/example_variables.rc" "$out/example_variables.rc"
	chmod -R u+w "$out"
}

# ensure_upstream_capm3_release renders the release into the local
# repository under $1 unless it is there, through a temporary name.
ensure_upstream_capm3_release() {
	local repo="$1/repository" tmp components
	components="$repo/infrastructure-metal3/${UPSTREAM_CAPM3_VERSION}/infrastructure-components.yaml"
	if [ -f "$components" ]; then
		return 0
	fi
	tmp="$1/.repository.partial.$$"
	rm -rf "$tmp"
	render_upstream_capm3_release "$tmp/infrastructure-metal3/${UPSTREAM_CAPM3_VERSION}"
	# -T: a concurrent run that got there first keeps its repository/.
	if ! mv -fT "$tmp" "$repo" 2>/dev/null; then
		rm -rf "$tmp"
		[ -f "$components" ] || { log "cannot move the rendered release to $repo"; return 1; }
	fi
}

# ensure builds $name into $dir unless it is already there. Builds go to a
# temporary name first so an interrupted build never leaves a half binary that
# a later run would trust.
ensure() {
	local dir="$1" name="$2" builder="$3"
	if [ -x "$dir/$name" ]; then
		return 0
	fi
	mkdir -p "$dir"
	local tmp="$dir/.$name.partial.$$"
	"$builder" "$tmp"
	mv -f "$tmp" "$dir/$name"
}

# ensure_crds fetches CRDs with $fetcher into $dir/crds unless they are
# there, through a temporary name as ensure does, and prints $dir. $dir may
# hold more (upstream-capm3 builds its binary beside the CRDs).
ensure_crds() {
	local dir="$1" fetcher="$2" tmp
	if [ ! -d "$dir/crds" ]; then
		mkdir -p "$dir"
		tmp="$dir/.crds.partial.$$"
		rm -rf "$tmp"
		"$fetcher" "$tmp"
		# -T: a concurrent run that got there first keeps its crds/.
		mv -fT "$tmp/crds" "$dir/crds" 2>/dev/null || [ -d "$dir/crds" ]
		rm -rf "$tmp"
	fi
	echo "$dir"
}

case "${1:-}" in
envtest)
	# -2: the API server reports its version (build flags changed).
	dir="$CACHE_ROOT/envtest/k8s-${KUBERNETES_VERSION}-etcd-${ETCD_VERSION}-2"
	ensure "$dir" kube-apiserver build_kube_apiserver
	ensure "$dir" etcd build_etcd
	echo "$dir"
	;;
bmo)
	dir="$CACHE_ROOT/bmo/${BMO_VERSION}"
	ensure "$dir" baremetal-operator build_bmo
	echo "$dir"
	;;
ipam)
	dir="$CACHE_ROOT/ipam/${IPAM_VERSION}"
	ensure "$dir" ip-address-manager build_ipam
	echo "$dir"
	;;
incluster-ipam)
	dir="$CACHE_ROOT/incluster-ipam/${INCLUSTER_IPAM_VERSION}"
	ensure "$dir" ipam-incluster build_incluster_ipam
	echo "$dir"
	;;
cert-manager-crds)
	ensure_crds "$CACHE_ROOT/cert-manager/${CERT_MANAGER_VERSION}" fetch_cert_manager_crds
	;;
upstream-capm3-crds)
	ensure_crds "$CACHE_ROOT/upstream-capm3/${UPSTREAM_CAPM3_VERSION}" fetch_upstream_capm3_crds
	;;
upstream-capm3)
	# The directory of upstream-capm3-crds: the build ships the same crds/.
	dir="$CACHE_ROOT/upstream-capm3/${UPSTREAM_CAPM3_VERSION}"
	ensure "$dir" upstream-capm3-manager build_upstream_capm3
	ensure_upstream_capm3_release "$dir"
	echo "$dir"
	;;
upstream-capm3-source)
	# The module cache is the cache here: printed as is, read-only.
	new_scratch_module
	dir="$(cd "$SCRATCH" && GONOSUMDB=github.com/metal3-io go mod download -json "github.com/metal3-io/cluster-api-provider-metal3@${UPSTREAM_CAPM3_VERSION}" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	[ -n "$dir" ] || { log "cannot download github.com/metal3-io/cluster-api-provider-metal3@${UPSTREAM_CAPM3_VERSION}"; exit 1; }
	echo "$dir"
	;;
*)
	echo "usage: $0 envtest|bmo|ipam|incluster-ipam|cert-manager-crds|upstream-capm3-crds|upstream-capm3|upstream-capm3-source" >&2
	exit 2
	;;
esac
