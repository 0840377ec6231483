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

package identity

import (
	"errors"
	"fmt"
)

// Error says why an identity cannot be used. Reason is one of the
// IdentityReady condition reasons, so controllers surface it as is; Message
// names the Secret and, for a bad kubeconfig, the offending field.
type Error struct {
	Key     Key
	Reason  string
	Message string
	// Terminal errors need the user to change something (the Secret, the
	// identityRef, RBAC); retrying sooner than the next change is pointless.
	Terminal bool
	cause    error
	// detail is Message without the identity it is about.
	detail string
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.cause }

// AsError returns the Error in err's chain, if any.
func AsError(err error) (*Error, bool) {
	var ie *Error
	ok := errors.As(err, &ie)
	return ie, ok
}

func NewError(key Key, reason string, terminal bool, cause error, format string, args ...any) *Error {
	detail := fmt.Sprintf(format, args...)
	return &Error{
		Key:      key,
		Reason:   reason,
		Terminal: terminal,
		Message:  fmt.Sprintf("identity %s: %s", key, detail),
		cause:    cause,
		detail:   detail,
	}
}

// For is e about key instead: a connection's error as the users of a
// Metal3ClusterIdentity see it, naming the identity they asked for.
func (e *Error) For(key Key) *Error {
	if e.Key == key {
		return e
	}
	return &Error{Key: key, Reason: e.Reason, Terminal: e.Terminal, Message: fmt.Sprintf("identity %s: %s", key, e.detail),
		cause: e.cause, detail: e.detail}
}
