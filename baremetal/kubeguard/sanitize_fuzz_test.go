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

package kubeguard

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzSanitizeServerMessage: whatever a server puts in a Status message,
// what reaches a condition is valid UTF-8 on one line, without control or
// formatting characters, and capped.
func FuzzSanitizeServerMessage(f *testing.F) {
	for _, seed := range []string{
		`User "tenant-a" cannot update resource "baremetalhosts" in API group "metal3.io"`,
		"line one\r\nline two\x1b[31m\u202egnp.exe",
		"\xff\xfe invalid \xc3",
		strings.Repeat("a ", maxServerMessageRunes),
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		got := SanitizeServerMessage(msg)
		if !utf8.ValidString(got) {
			t.Fatalf("%q is not valid UTF-8", got)
		}
		if n := utf8.RuneCountInString(got); n > maxServerMessageRunes+1 {
			t.Fatalf("%d runes, more than the cap of %d", n, maxServerMessageRunes)
		}
		for _, r := range got {
			if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || (unicode.IsSpace(r) && r != ' ') {
				t.Fatalf("%q keeps %U", got, r)
			}
		}
	})
}
