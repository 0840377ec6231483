package remote

import (
	"errors"
	"fmt"

	infrav1 "github.com/metal3-io/cluster-api-provider-metal3/api/v1beta1"
)

// IdentityError says why an identity cannot be used. Reason is one of the
// IdentityReady condition reasons, so controllers surface it as is; Message
// names the Secret and, for a bad kubeconfig, the offending field.
type IdentityError struct {
	Key     IdentityKey
	Reason  string
	Message string
	// Terminal errors need the user to change something (the Secret, the
	// identityRef, RBAC); retrying sooner than the next change is pointless.
	Terminal bool
	cause    error
}

func (e *IdentityError) Error() string { return e.Message }

func (e *IdentityError) Unwrap() error { return e.cause }

// AsIdentityError returns the IdentityError in err's chain, if any.
func AsIdentityError(err error) (*IdentityError, bool) {
	var ie *IdentityError
	ok := errors.As(err, &ie)
	return ie, ok
}

func newIdentityError(key IdentityKey, reason string, terminal bool, cause error, format string, args ...any) *IdentityError {
	return &IdentityError{
		Key:      key,
		Reason:   reason,
		Terminal: terminal,
		Message:  fmt.Sprintf("identity %s: ", key) + fmt.Sprintf(format, args...),
		cause:    cause,
	}
}

// invalidKubeconfig reports a kubeconfig field that cannot be used.
func invalidKubeconfig(key IdentityKey, fieldPath, problem string) *IdentityError {
	return newIdentityError(key, infrav1.IdentityInvalidKubeconfigReason, true, nil, "kubeconfig field %s: %s", fieldPath, problem)
}
