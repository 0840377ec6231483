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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unicode"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

const (
	// maxStatusBytes caps what is read of an error response: a Status is
	// a few hundred bytes.
	maxStatusBytes = 64 << 10
	// maxServerMessageRunes caps a server's Status message shown to users.
	maxServerMessageRunes = 512
)

// guard is the innermost wrapper of a tenant server's HTTP transport,
// between client-go and the connection: everything the server answers
// passes it before any client reads it. It
//   - refuses requests to URLs the ServerPolicy forbids (a second line behind
//     the dialer; redirects are not followed at all);
//   - bounds every request but watches to requestTimeout, so a slow server
//     cannot hold a reconcile worker;
//   - bounds the requests but watches in flight (slots), so a slow server
//     cannot hold every worker either: a request that finds no slot free
//     within slotWait fails with ErrTooManyRequestsInFlight;
//   - caps every response body at maxBodyBytes (a watch: per connection);
//   - replaces the body of every error response by a Status of its own,
//     keeping only the sanitized message of a well-formed Kubernetes Status,
//     and that only once the server passed the discovery handshake; so no
//     text a server sends reaches a condition, an Event or a log line;
//   - replaces transport errors by a description of their kind, since
//     their text can carry what the server sent (a banner, certificate
//     names) or the provider's own network details.
type guard struct {
	next           http.RoundTripper
	policy         *ServerPolicy
	requestTimeout time.Duration
	maxBodyBytes   int64
	// slots holds one token per request in flight; nil: no bound.
	slots chan struct{}
	// verified is set once the server answered the discovery handshake as
	// a Kubernetes API server; shared by every transport of one client.
	verified *atomic.Bool
}

// slotWait is how long a request waits for a slot: long enough for a burst
// of quick requests to a healthy server to pass, short enough that a worker
// is not held by a server that holds every slot.
const slotWait = time.Second

// ErrTooManyRequestsInFlight fails a request when the server already has as
// many requests in flight as the provider lets one tenant's server have.
var ErrTooManyRequestsInFlight = errors.New("too many requests to this server are in flight (the server is slow); retried later")

// rawResponseKey marks the discovery handshake's request: its error bodies
// reach the handshake, which judges their shape and never shows them.
type rawResponseKey struct{}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.policy.checkURL(req.URL); err != nil {
		return nil, err
	}
	done := func() {}
	if !isWatch(req.URL) {
		release, err := g.takeSlot(req.Context())
		if err != nil {
			return nil, err
		}
		done = release
		if g.requestTimeout > 0 {
			ctx, cancel := context.WithTimeout(req.Context(), g.requestTimeout)
			req = req.WithContext(ctx)
			done = func() { cancel(); release() }
		}
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		done()
		return nil, describeTransportError(err)
	}
	resp.Body = &cappedBody{body: resp.Body, remaining: g.maxBodyBytes, limit: g.maxBodyBytes, onClose: sync.OnceFunc(done)}
	verified := g.verified.Load()
	if !verified {
		// Warnings are logged by client-go; an unknown server has no say.
		resp.Header.Del("Warning")
	}
	if isErrorStatus(resp.StatusCode) && req.Context().Value(rawResponseKey{}) == nil {
		replaceErrorBody(resp, verified)
	}
	return resp, nil
}

// takeSlot waits up to slotWait for a request slot and returns its release.
func (g *guard) takeSlot(ctx context.Context) (func(), error) {
	if g.slots == nil {
		return func() {}, nil
	}
	select {
	case g.slots <- struct{}{}:
	default:
		timer := time.NewTimer(slotWait)
		defer timer.Stop()
		select {
		case g.slots <- struct{}{}:
		case <-timer.C:
			return nil, ErrTooManyRequestsInFlight
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return sync.OnceFunc(func() { <-g.slots }), nil
}

// isWatch tells streaming requests, which stay open as long as the server
// sends events, from the others.
func isWatch(u *url.URL) bool {
	if strings.Contains(u.Path, "/watch/") {
		return true
	}
	if !strings.Contains(u.RawQuery, "watch=") {
		// Most requests: no need to parse the query.
		return false
	}
	watch := u.Query().Get("watch")
	return watch == "true" || watch == "1"
}

// isErrorStatus is client-go's notion of a failed request.
func isErrorStatus(code int) bool {
	return code < http.StatusOK || code > http.StatusPartialContent
}

// replaceErrorBody swaps resp's body for a Status carrying the HTTP code, the
// reason that code means and, from a verified server only, its own Status
// message once sanitized. The Status is encoded as the server's was (JSON or
// protobuf, which client-go asks for built-in kinds), else as JSON.
func replaceErrorBody(resp *http.Response, verified bool) {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatusBytes))
	_ = resp.Body.Close()
	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Code:     int32(resp.StatusCode),
		Reason:   apierrors.NewGenericServerResponse(resp.StatusCode, "", schema.GroupResource{}, "", "", 0, false).ErrStatus.Reason,
		Message:  hiddenAnswer(resp.StatusCode),
	}
	contentType := resp.Header.Get("Content-Type")
	if server, ok := parseStatus(raw, contentType); ok && verified {
		status.Reason, status.Message = server.Reason, SanitizeServerMessage(server.Message)
		if server.Details != nil {
			status.Details = &metav1.StatusDetails{
				Name: SanitizeServerMessage(server.Details.Name), Group: SanitizeServerMessage(server.Details.Group),
				Kind: SanitizeServerMessage(server.Details.Kind), RetryAfterSeconds: server.Details.RetryAfterSeconds,
			}
		}
	}
	info, ok := statusSerializer(contentType)
	if !ok {
		info, _ = statusSerializer(runtime.ContentTypeJSON)
	}
	var body bytes.Buffer
	_ = info.Serializer.Encode(status, &body)
	header := http.Header{}
	header.Set("Content-Type", info.MediaType)
	if retryAfter := resp.Header.Get("Retry-After"); verified && retryAfter != "" {
		header.Set("Retry-After", retryAfter)
	}
	resp.Header = header
	resp.Body = io.NopCloser(&body)
	resp.ContentLength = int64(body.Len())
}

// hiddenAnswer is the message of an error whose answer is not shown.
func hiddenAnswer(code int) string {
	return fmt.Sprintf("HTTP %d; the server's answer is not shown", code)
}

// statusCodecs know the Kubernetes Status alone, in JSON and protobuf.
var statusCodecs = func() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(scheme)
}()

// statusSerializer is the serializer of a JSON or protobuf content type.
func statusSerializer(contentType string) (runtime.SerializerInfo, bool) {
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || (mediaType != runtime.ContentTypeJSON && mediaType != runtime.ContentTypeProtobuf) {
		return runtime.SerializerInfo{}, false
	}
	return runtime.SerializerInfoForMediaType(statusCodecs.SupportedMediaTypes(), mediaType)
}

// parseStatus reads a Kubernetes Status in JSON or protobuf; ok is false for
// anything else.
func parseStatus(body []byte, contentType string) (*metav1.Status, bool) {
	info, ok := statusSerializer(contentType)
	if !ok {
		return nil, false
	}
	obj, _, err := info.Serializer.Decode(body, nil, nil)
	if err != nil {
		return nil, false
	}
	status, ok := obj.(*metav1.Status)
	if !ok || status.Code == 0 || (status.Status != metav1.StatusFailure && status.Status != metav1.StatusSuccess) {
		return nil, false
	}
	return status, true
}

// SanitizeServerMessage makes a message from an API server fit for a
// condition: control and formatting characters (which could forge lines or
// reorder text) are dropped, runs of spaces folded, and the length capped.
func SanitizeServerMessage(msg string) string {
	var b strings.Builder
	runes, space := 0, false
	for _, r := range msg {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			continue
		}
		need := 1
		if space {
			need = 2
		}
		if runes+need > maxServerMessageRunes {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			runes++
			space = false
		}
		b.WriteRune(r)
		runes++
	}
	return b.String()
}

// errResponseTooLarge ends a body longer than the cap.
var errResponseTooLarge = errors.New("the response is larger than the provider accepts from a tenant's server")

// cappedBody ends a response body after limit bytes, describes read errors
// like transport errors, and ends the request's timeout on Close.
type cappedBody struct {
	body      io.ReadCloser
	remaining int64
	limit     int64
	onClose   func()
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.limit > 0 {
		if c.remaining <= 0 {
			return 0, errResponseTooLarge
		}
		if int64(len(p)) > c.remaining {
			p = p[:c.remaining]
		}
	}
	n, err := c.body.Read(p)
	c.remaining -= int64(n)
	if err != nil && err != io.EOF { //nolint:errorlint // io.EOF is returned as is by contract
		err = describeTransportError(err)
	}
	return n, err
}

func (c *cappedBody) Close() error {
	err := c.body.Close()
	c.onClose()
	return err
}

// transportError is a failed exchange with a tenant's server, told in
// the provider's words. The cause stays reachable for errors.Is/As (timeouts,
// resets), but its text, which may quote the server, is never shown.
type transportError struct {
	problem string
	cause   error
}

func (e *transportError) Error() string { return e.problem }
func (e *transportError) Unwrap() error { return e.cause }

// describeTransportError replaces err by a transportError naming its kind.
// The texts that client-go matches to decide on retries ("connection reset
// by peer", ...) are kept where they are true; io.EOF and context errors,
// which carry no text of the server, pass as they are.
func describeTransportError(err error) error {
	var (
		notAllowed *ServerNotAllowedError
		described  *transportError
		dnsErr     *net.DNSError
		netErr     net.Error
		errno      syscall.Errno
		unknownCA  x509.UnknownAuthorityError
		hostname   x509.HostnameError
		invalid    x509.CertificateInvalidError
		record     tls.RecordHeaderError
		alert      tls.AlertError
		protocol   textproto.ProtocolError
	)
	msg := err.Error()
	problem := "the connection to the server failed"
	switch {
	case errors.As(err, &notAllowed), errors.As(err, &described), errors.Is(err, errResponseTooLarge),
		err == io.EOF, err == io.ErrUnexpectedEOF, //nolint:errorlint // client-go compares these by identity
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, ErrTooManyRequestsInFlight):
		return err
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		problem = "the server's host name does not resolve"
	case errors.As(err, &dnsErr):
		problem = "the server's host name could not be looked up"
	case errors.As(err, &errno) && errno == syscall.ECONNREFUSED:
		problem = "connection refused"
	case errors.As(err, &errno) && errno == syscall.ECONNRESET:
		problem = "connection reset by peer"
	case errors.As(err, &errno) && (errno == syscall.EHOSTUNREACH || errno == syscall.ENETUNREACH):
		problem = "no route to the server"
	case errors.As(err, &netErr) && netErr.Timeout():
		problem = "the server did not answer in time (i/o timeout)"
	case errors.As(err, &unknownCA):
		problem = "the server's certificate is not signed by the kubeconfig's certificate authority"
	case errors.As(err, &hostname):
		problem = "the server's certificate is not valid for its host name"
	case errors.As(err, &invalid):
		problem = "the server's certificate is not valid (expired, not yet valid, or not for serving)"
	case errors.As(err, &record), strings.Contains(msg, "server gave HTTP response to HTTPS client"):
		problem = "the server does not speak TLS"
	case errors.As(err, &alert), strings.Contains(msg, "tls:"):
		problem = "the TLS handshake with the server failed"
	case strings.Contains(msg, "http2: server sent GOAWAY and closed the connection"):
		problem = "http2: server sent GOAWAY and closed the connection"
	case strings.Contains(strings.ToLower(msg), "use of closed network connection"):
		problem = "use of closed network connection"
	case errors.As(err, &protocol), strings.Contains(msg, "malformed HTTP"):
		problem = "the server does not answer HTTP"
	}
	return &transportError{problem: problem, cause: err}
}

// noRedirects makes a tenant server's HTTP client return a redirect as the
// response it is: an API server has no reason to send one, and following
// it would reach a server the tenant did not name.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
