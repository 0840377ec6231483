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

# Fails when a Go file or a shell script of the project does not start with
# the licence header of hack/boilerplate.go.txt (Go) or hack/boilerplate.sh.txt
# (scripts, after the #! line). With --fix it adds the header to those files
# instead. Files git ignores are not the project's and are skipped.
set -euo pipefail

cd "$(git rev-parse --show-toplevel)"
fix=false
[[ "${1:-}" == "--fix" ]] && fix=true

go_header="$(cat hack/boilerplate.go.txt)"
sh_header="$(cat hack/boilerplate.sh.txt)"
go_lines=$(wc -l < hack/boilerplate.go.txt)
sh_lines=$(wc -l < hack/boilerplate.sh.txt)

missing=()
while IFS= read -r file; do
	[[ -f "$file" ]] || continue
	case "$file" in
	*.go)
		# controller-gen writes the header below the build constraint,
		# conversion-gen below it and its old "// +build" form.
		skip=0
		[[ "$(head -n 1 "$file")" == //go:build* ]] && skip=2
		[[ $skip == 2 && "$(sed -n 2p "$file")" == "// +build"* ]] && skip=3
		[[ "$(sed -n "$((skip + 1)),$((skip + go_lines))p" "$file")" == "$go_header" ]] && continue
		if $fix; then
			{ head -n "$skip" "$file"; printf '%s\n\n' "$go_header"; tail -n +"$((skip + 1))" "$file"; } > "$file.licence"
			mv "$file.licence" "$file"
		fi
		;;
	*)
		[[ "$(head -c 2 "$file")" == "#!" ]] || continue
		[[ "$(sed -n "2,$((sh_lines + 1))p" "$file")" == "$sh_header" ]] && continue
		if $fix; then
			{ head -n 1 "$file"; printf '%s\n\n' "$sh_header"; tail -n +2 "$file"; } > "$file.licence"
			chmod --reference="$file" "$file.licence" && mv "$file.licence" "$file"
		fi
		;;
	esac
	missing+=("$file")
done < <(git ls-files --cached --others --exclude-standard)

if ((${#missing[@]} == 0)); then
	exit 0
fi
if $fix; then
	printf 'added the licence header to %s\n' "${missing[@]}"
	exit 0
fi
printf 'missing the licence header: %s\n' "${missing[@]}"
echo "run 'bash hack/check-license-headers.sh --fix' to add it"
exit 1
