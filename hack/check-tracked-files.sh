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

# Fails when git tracks a build output: an executable binary (ELF, Mach-O,
# PE) or any file over 1 MiB. Build outputs belong in .gitignore, releases in
# out/, tools in hack/tools/bin or the tools cache.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

max_bytes=$((1024 * 1024))
status=0
while IFS= read -r -d '' file; do
	[ -f "$file" ] || continue # deleted in the work tree, or a submodule
	size=$(stat -c %s -- "$file")
	if [ "$size" -gt "$max_bytes" ]; then
		echo "tracked file over 1 MiB: $file ($size bytes)"
		status=1
	fi
	magic=$(head -c 4 -- "$file" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46) kind="ELF executable" ;;
	feedface | feedfacf | cefaedfe | cffaedfe | cafebabe) kind="Mach-O executable" ;;
	4d5a*) kind="PE executable" ;;
	*) kind="" ;;
	esac
	if [ -n "$kind" ]; then
		echo "tracked $kind: $file"
		status=1
	fi
done < <(git ls-files -z)
if [ "$status" -ne 0 ]; then
	echo "remove build outputs from git (git rm --cached <file>) and extend .gitignore"
fi
exit "$status"
