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

package hostaccess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/identity"
)

// maxDiscoveryBytes caps the discovery answer: an API version list is a few
// hundred bytes.
const maxDiscoveryBytes = 64 << 10

// server is an identity's API server as the tenant named it, for requests
// and for messages.
type server struct {
	url *url.URL
	// display is the URL without its user information, for messages.
	display string
}

// maxServerDisplayRunes caps a server URL quoted in messages, which must fit
// in an Event.
const maxServerDisplayRunes = 256

func parseServer(raw string) (server, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return server{}, err
	}
	display := []rune(u.Redacted())
	if len(display) > maxServerDisplayRunes {
		display = append(display[:maxServerDisplayRunes], '…')
	}
	return server{url: u, display: string(display)}, nil
}

// discover is the discovery handshake, the first request made to an
// identity's server and the one its probe repeats: GET <server>/api must be
// answered as a Kubernetes API server does, 200 with its list of API
// versions. A Kubernetes Status with 401 or 403 comes from an API server
// refusing the credentials. Anything else means the kubeconfig does not point
// at an API server; the answer is judged, never shown, and nothing more is
// sent to that server until the identity is retried.
func discover(ctx context.Context, key identity.Key, httpClient *http.Client, srv server) error {
	target := *srv.url
	target.Path = strings.TrimSuffix(target.Path, "/") + "/api"
	target.RawPath, target.RawQuery, target.Fragment = "", "", ""
	req, err := http.NewRequestWithContext(context.WithValue(ctx, rawResponseKey{}, true), http.MethodGet, target.String(), nil)
	if err != nil {
		return identity.NewError(key, infrav1.IdentityInvalidKubeconfigReason, true, err, "server %s cannot be requested", srv.display)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		return classify(key, srv.display, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDiscoveryBytes))
	if err != nil {
		return classify(key, srv.display, err)
	}
	code := resp.StatusCode
	status, isStatus := parseStatus(body, resp.Header.Get("Content-Type"))
	isStatus = isStatus && int(status.Code) == code
	switch {
	case code == http.StatusOK && isAPIVersions(body, resp.Header.Get("Content-Type")):
		return nil
	case code == http.StatusUnauthorized && isStatus:
		return identity.NewError(key, infrav1.IdentityUnauthorizedReason, false, nil,
			"the API server at %s rejects the credentials (HTTP 401)", srv.display)
	case code == http.StatusForbidden && isStatus:
		return identity.NewError(key, infrav1.IdentityForbiddenReason, false, nil,
			"the API server at %s does not let these credentials discover its APIs (HTTP 403)", srv.display)
	case (code == http.StatusTooManyRequests || code >= http.StatusInternalServerError) && isStatus:
		return identity.NewError(key, infrav1.IdentityUnreachableReason, false, nil,
			"the API server at %s cannot serve requests now (HTTP %d)", srv.display, code)
	}
	what := "an answer that is not a Kubernetes API version list"
	switch {
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		what = "a redirect, which the provider does not follow"
	case code != http.StatusOK:
		what = "a body that is not a Kubernetes Status"
	}
	return identity.NewError(key, infrav1.IdentityNotAnAPIServerReason, false, nil,
		"the server at %s does not answer as a Kubernetes API server: GET %s returned HTTP %d with %s (not shown)",
		srv.display, target.Path, code, what)
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

// classify turns a failed request to an identity's server into the
// identity condition it means. Its message is the provider's: the server
// URL, the HTTP code and, only for a Kubernetes Status that passed the
// guard (from a server that answered the discovery handshake), the
// server's own sanitized message. Transport failures are told by kind.
func classify(key identity.Key, serverURL string, err error) *identity.Error {
	if ie, ok := identity.AsError(err); ok {
		return ie
	}
	where := "the API server"
	if serverURL != "" {
		where = "the API server at " + serverURL
	}
	var notAllowed *ServerNotAllowedError
	if errors.As(err, &notAllowed) {
		return identity.NewError(key, infrav1.IdentityServerNotAllowedReason, false, err, "%s is refused: %s", where, notAllowed.Error())
	}
	var apiStatus apierrors.APIStatus
	if errors.As(err, &apiStatus) {
		status := apiStatus.Status()
		detail := ""
		if msg := SanitizeServerMessage(status.Message); msg != "" && msg != hiddenAnswer(int(status.Code)) {
			detail = ": " + msg
		}
		switch {
		case apierrors.IsUnauthorized(err):
			return identity.NewError(key, infrav1.IdentityUnauthorizedReason, false, err, "%s rejects the credentials (HTTP 401)", where)
		case apierrors.IsForbidden(err):
			return identity.NewError(key, infrav1.IdentityForbiddenReason, false, err, "%s forbids a request (HTTP 403)%s", where, detail)
		default:
			return identity.NewError(key, infrav1.IdentityUnreachableReason, false, err, "%s answered HTTP %d%s", where, status.Code, detail)
		}
	}
	return identity.NewError(key, infrav1.IdentityUnreachableReason, false, err, "cannot reach %s: %s", where, transportProblem(err))
}

// transportProblem names what went wrong in a request that got no answer,
// in the provider's words whatever wrapped it.
func transportProblem(err error) string {
	var described *transportError
	switch {
	case errors.As(err, &described):
		return described.problem
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "the request was cancelled"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the server closed the connection"
	case errors.Is(err, errResponseTooLarge):
		return errResponseTooLarge.Error()
	}
	if errors.As(describeTransportError(err), &described) {
		return described.problem
	}
	return fmt.Sprintf("the request failed (%T)", err)
}
