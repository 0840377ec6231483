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
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// maxDiscoveryBytes caps the discovery answer: an API version list is a few
// hundred bytes.
const maxDiscoveryBytes = 64 << 10

// Server is a tenant's API server as the tenant named it, for requests and
// for messages.
type Server struct {
	URL *url.URL
	// Display is the URL without its user information, capped, for messages.
	Display string
}

// maxServerDisplayRunes caps a server URL quoted in messages, which must fit
// in an Event.
const maxServerDisplayRunes = 256

// ParseServer reads a kubeconfig's server URL.
func ParseServer(raw string) (Server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Server{}, err
	}
	display := []rune(u.Redacted())
	if len(display) > maxServerDisplayRunes {
		display = append(display[:maxServerDisplayRunes], '…')
	}
	return Server{URL: u, Display: string(display)}, nil
}

// discover is the discovery handshake, the first request made to a
// tenant's server and the one probes repeat: GET <server>/api must be
// answered as a Kubernetes API server does, 200 with its list of API
// versions. A Kubernetes Status with 401 or 403 comes from an API server
// refusing the credentials. Anything else means the kubeconfig does not point
// at an API server; the answer is judged, never shown, and the caller sends
// nothing more to that server until it retries.
func discover(ctx context.Context, httpClient *http.Client, srv Server) error {
	target := *srv.URL
	target.Path = strings.TrimSuffix(target.Path, "/") + "/api"
	target.RawPath, target.RawQuery, target.Fragment = "", "", ""
	req, err := http.NewRequestWithContext(context.WithValue(ctx, rawResponseKey{}, true), http.MethodGet, target.String(), nil)
	if err != nil {
		return newError(ReasonInvalidKubeconfig, true, err, "server %s cannot be requested", srv.Display)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return Classify(srv.Display, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes))
	if err != nil {
		return Classify(srv.Display, err)
	}
	code := resp.StatusCode
	status, isStatus := parseStatus(body, resp.Header.Get("Content-Type"))
	isStatus = isStatus && int(status.Code) == code
	switch {
	case code == http.StatusOK && isAPIVersions(body, resp.Header.Get("Content-Type")):
		return nil
	case code == http.StatusUnauthorized && isStatus:
		return newError(ReasonUnauthorized, false, nil,
			"the API server at %s rejects the credentials (HTTP 401)", srv.Display)
	case code == http.StatusForbidden && isStatus:
		return newError(ReasonForbidden, false, nil,
			"the API server at %s does not let these credentials discover its APIs (HTTP 403)", srv.Display)
	case (code == http.StatusTooManyRequests || code >= http.StatusInternalServerError) && isStatus:
		return newError(ReasonUnreachable, false, nil,
			"the API server at %s cannot serve requests now (HTTP %d)", srv.Display, code)
	}
	what := "an answer that is not a Kubernetes API version list"
	switch {
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		what = "a redirect, which the provider does not follow"
	case code != http.StatusOK:
		what = "a body that is not a Kubernetes Status"
	}
	return newError(ReasonNotAnAPIServer, false, nil,
		"the server at %s does not answer as a Kubernetes API server: GET %s returned HTTP %d with %s (not shown)",
		srv.Display, target.Path, code, what)
}

// isAPIVersions reports whether body is the APIVersions object /api serves.
func isAPIVersions(body []byte, contentType string) bool {
	if mediaType, _, err := mime.ParseMediaType(contentType); err != nil || mediaType != "application/json" {
		return false
	}
	var versions struct {
		Kind     string   `json:"kind"`
		Versions []string `json:"versions"`
	}
	if err := json.Unmarshal(body, &versions); err != nil {
		return false
	}
	return versions.Kind == "APIVersions" && len(versions.Versions) > 0
}
