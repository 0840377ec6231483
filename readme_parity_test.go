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

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeParityRowsNameTheirTests keeps README's parity table honest:
// every row of "Parity with upstream CAPM3" names at least one test, and
// every test it names exists — a Go test function anywhere in the tree,
// or an e2e spec by the start of its Describe text. A renamed or deleted
// test fails here instead of leaving the README pointing at nothing.
func TestReadmeParityRowsNameTheirTests(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## Parity with upstream CAPM3")
	if start < 0 {
		t.Fatal(`README.md has no section "Parity with upstream CAPM3"`)
	}
	section = section[start:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}

	goTests := map[string]bool{}
	var e2eSpecs []string
	describe := regexp.MustCompile(`Describe\("([^"]+)"`)
	testFunc := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// hack/ holds the tool cache's sources, not this tree's tests.
		if d.IsDir() && (d.Name() == ".git" || path == "hack") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(src), -1) {
			goTests[m[1]] = true
		}
		if strings.HasPrefix(path, filepath.Join("test", "e2e")) {
			for _, m := range describe.FindAllStringSubmatch(string(src), -1) {
				e2eSpecs = append(e2eSpecs, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	named := regexp.MustCompile("`(Test\\w+)`")
	e2eNamed := regexp.MustCompile(`e2e "([^"]+)"`)
	rows := 0
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if !strings.HasPrefix(line, "| ") || len(cells) < 3 || strings.HasPrefix(line, "| ---") || strings.HasPrefix(line, "| upstream behaviour") {
			continue
		}
		rows++
		tests := cells[len(cells)-1]
		goNames, specs := named.FindAllStringSubmatch(tests, -1), e2eNamed.FindAllStringSubmatch(tests, -1)
		if len(goNames) == 0 && len(specs) == 0 {
			t.Errorf("the parity row %q names no test", cells[0])
		}
		for _, m := range goNames {
			if !goTests[m[1]] {
				t.Errorf("the parity row %q names %s, which no _test.go file defines", cells[0], m[1])
			}
		}
		for _, m := range specs {
			found := false
			for _, spec := range e2eSpecs {
				found = found || strings.HasPrefix(spec, m[1])
			}
			if !found {
				t.Errorf("the parity row %q names the e2e spec %q, which test/e2e does not describe", cells[0], m[1])
			}
		}
	}
	if rows < 10 {
		t.Fatalf("found only %d rows in README's parity table: is it still a table?", rows)
	}
}
