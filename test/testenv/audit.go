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

package testenv

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// auditPolicy logs every request once, when its response is complete (and
// watches when they start, since they complete only when they end), with
// metadata only: who, what, which object, which status code.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

func configureAuditLog(env *envtest.Environment, path string) error {
	policy := filepath.Join(filepath.Dir(path), filepath.Base(path)+".policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	env.ControlPlane.GetAPIServer().Configure().
		Set("audit-log-path", path).
		Set("audit-policy-file", policy).
		// Written synchronously, so that a count taken after a request
		// returned includes it.
		Set("audit-log-mode", "blocking").
		Set("audit-log-maxsize", "0")
	return nil
}

// AuditEvent is the part of an API server audit event that benchmarks
// count by.
type AuditEvent struct {
	Stage      string `json:"stage"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
}

// Code is the HTTP status code of the response (0 if none was recorded).
func (e *AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// Resource names what the request was about, e.g. "secrets" or
// "metal3machines/status".
func (e *AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return e.RequestURI
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// IsWrite reports whether the request changes state.
func (e *AuditEvent) IsWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// Counted reports whether the event stands for one request: completed
// requests, and watches when they start.
func (e *AuditEvent) Counted() bool {
	if e.Verb == "watch" {
		return e.Stage == "ResponseStarted"
	}
	return e.Stage == "ResponseComplete" || e.Stage == "Panic"
}

// ReadAuditLog parses the audit log at path; events are in the order the
// API server wrote them.
func ReadAuditLog(path string) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var events []AuditEvent
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		events = append(events, e)
	}
	return events, scanner.Err()
}

// Forbidden lists the requests of users that the API server whose audit
// log is at path answered with 403 Forbidden, as "user verb resource
// namespace/name": a permission the shipped RBAC lacks.
func Forbidden(path string, users ...string) ([]string, error) {
	events, err := ReadAuditLog(path)
	if err != nil {
		return nil, err
	}
	var forbidden []string
	for i := range events {
		e := &events[i]
		if !e.Counted() || e.Code() != http.StatusForbidden || !slices.Contains(users, e.User.Username) {
			continue
		}
		what := e.Resource()
		if e.ObjectRef != nil {
			what += " " + e.ObjectRef.Namespace + "/" + e.ObjectRef.Name
		}
		forbidden = append(forbidden, fmt.Sprintf("%s %s %s", e.User.Username, e.Verb, what))
	}
	return forbidden, nil
}
