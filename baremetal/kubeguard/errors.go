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
	"errors"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Reasons a tenant's API server cannot be used. They are, with the same
// values, the reasons of the IdentityReady condition (package hostaccess)
// and of the WorkloadClusterReachable condition (package workload).
const (
	// ReasonInvalidKubeconfig: unparseable, or uses a forbidden field.
	ReasonInvalidKubeconfig = "InvalidKubeconfig"
	// ReasonContextNotFound: the context (or current-context) is missing.
	ReasonContextNotFound = "ContextNotFound"
	// ReasonServerNotAllowed: the server breaks the ServerPolicy; nothing
	// was sent to it.
	ReasonServerNotAllowed = "ServerNotAllowed"
	// ReasonNotAnAPIServer: the server failed the discovery handshake.
	ReasonNotAnAPIServer = "NotAnAPIServer"
	// ReasonUnreachable: no answer, or an answer that is no use.
	ReasonUnreachable = "Unreachable"
	// ReasonUnauthorized: the server rejects the credentials.
	ReasonUnauthorized = "Unauthorized"
	// ReasonForbidden: the credentials may not do what was asked.
	ReasonForbidden = "Forbidden"
)

// Error says why a tenant's API server cannot be used, in the provider's
// words: Message never quotes what a server answered, but the sanitized
// message of a Kubernetes Status from a server that passed the handshake.
type Error struct {
	Reason  string
	Message string
	// Terminal errors need the tenant to change its kubeconfig; retrying
	// before it does is pointless.
	Terminal bool
	cause    error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.cause }

// AsError returns the Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var ge *Error
	ok := errors.As(err, &ge)
	return ge, ok
}

func newError(reason string, terminal bool, cause error, format string, args ...any) *Error {
	return &Error{Reason: reason, Terminal: terminal, Message: fmt.Sprintf(format, args...), cause: cause}
}

// Classify turns a failed request to a tenant's server, named serverURL in
// messages (Server.Display), into an Error: the reason it means and a
// message of the provider's own, with the HTTP code and, only for a
// Kubernetes Status that passed the guard, the server's sanitized message.
// Transport failures are told by kind.
func Classify(serverURL string, err error) *Error {
	if ge, ok := AsError(err); ok {
		return ge
	}
	where := "the API server"
	if serverURL != "" {
		where = "the API server at " + serverURL
	}
	var notAllowed *ServerNotAllowedError
	if errors.As(err, &notAllowed) {
		return newError(ReasonServerNotAllowed, false, err, "%s is refused: %s", where, notAllowed.Error())
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
			return newError(ReasonUnauthorized, false, err, "%s rejects the credentials (HTTP 401)", where)
		case apierrors.IsForbidden(err):
			return newError(ReasonForbidden, false, err, "%s forbids a request (HTTP 403)%s", where, detail)
		default:
			return newError(ReasonUnreachable, false, err, "%s answered HTTP %d%s", where, status.Code, detail)
		}
	}
	return newError(ReasonUnreachable, false, err, "cannot reach %s: %s", where, transportProblem(err))
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
	case errors.Is(err, ErrTooManyRequestsInFlight):
		return ErrTooManyRequestsInFlight.Error()
	}
	if errors.As(describeTransportError(err), &described) {
		return described.problem
	}
	return fmt.Sprintf("the request failed (%T)", err)
}
