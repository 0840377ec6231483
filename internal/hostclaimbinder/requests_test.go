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

package hostclaimbinder

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	bmov1alpha1 "github.com/metal3-io/baremetal-operator/apis/metal3.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/hostclaim"
	"github.com/metal3-io/cluster-api-provider-metal3/baremetal/pool"
)

// requestLog records the requests a Reconciler sends to the API server,
// as "verb kind name", and their outcome when they fail.
type requestLog struct {
	mu       sync.Mutex
	requests []string
}

func (l *requestLog) add(verb string, obj client.Object, name string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	entry := fmt.Sprintf("%s %s %s", verb, reflect.TypeOf(obj).Elem().Name(), name)
	if err != nil {
		entry += " (failed)"
	}
	l.requests = append(l.requests, entry)
}

func (l *requestLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.requests
	l.requests = nil
	sort.Strings(out)
	return out
}

// requestTestEnv is a Reconciler over a fake API server whose requests
// are logged. Its Secret metadata cache shows the server's Secrets as they
// are, unless lagging: then it shows none.
type requestTestEnv struct {
	r      *Reconciler
	server client.Client
	log    *requestLog
}

func newRequestTestEnv(t *testing.T, lagging bool, objects ...client.Object) *requestTestEnv {
	t.Helper()
	scheme := newScheme()
	server := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objects...).Build()
	log := &requestLog{}
	counted := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			log.add("get", obj, key.Name, err)
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			log.add("create", obj, obj.GetName(), err)
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			err := c.Update(ctx, obj, opts...)
			log.add("update", obj, obj.GetName(), err)
			return err
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			err := c.Patch(ctx, obj, patch, opts...)
			log.add("patch", obj, obj.GetName(), err)
			return err
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			err := c.Delete(ctx, obj, opts...)
			log.add("delete", obj, obj.GetName(), err)
			return err
		},
	})
	var cache client.Reader = server
	if lagging {
		cache = fake.NewClientBuilder().WithScheme(scheme).Build()
	}
	return &requestTestEnv{
		r: &Reconciler{
			Client: counted, APIReader: counted, SecretMetadata: cache,
			Recorder: events.NewFakeRecorder(100),
		},
		server: server, log: log,
	}
}

const (
	requestTestClaimUID = types.UID("claim-uid")
	requestTestHostUID  = types.UID("host-uid")
)

func requestTestClaim(userData string) *bmov1alpha1.HostClaim {
	claim := &bmov1alpha1.HostClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "c", UID: requestTestClaimUID, Generation: 1},
		Spec:       bmov1alpha1.HostClaimSpec{PoweredOn: true, Image: testImage.DeepCopy()},
	}
	if userData != "" {
		claim.Spec.UserData = &corev1.SecretReference{Name: userData}
	}
	return claim
}

func requestTestHost() *bmov1alpha1.BareMetalHost {
	return &bmov1alpha1.BareMetalHost{ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: "h", UID: requestTestHostUID}}
}

func tenantSecret(name, data string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name},
		Data:       map[string][]byte{"userData": []byte(data)},
	}
}

func copyName(purpose string) string {
	return hostclaim.SecretCopyName("c", requestTestClaimUID, purpose)
}

// TestSyncSecretsRequests: the binder reads a Secret live only when the
// read may find something to do, and still writes what it must.
func TestSyncSecretsRequests(t *testing.T) {
	userDataCopy := copyName(pool.UserDataPurpose)
	for _, tt := range []struct {
		name string
		// userData is the Secret the claim references, if any.
		userData string
		objects  []client.Object
		lagging  bool
		// change, if set, runs between the two syncs.
		change func(t *testing.T, server client.Client)
		// dropReference: the claim references no Secret at the second sync.
		dropReference bool
		// first and second are the requests of two syncs in a row.
		first, second []string
	}{{
		name:   "no Secret referenced, no copy: nothing read",
		first:  nil,
		second: nil,
	}, {
		name:     "a Secret to copy: read once, copied, then not read again",
		userData: "ud", objects: []client.Object{tenantSecret("ud", "v1")},
		first:  []string{"create Secret " + userDataCopy, "get Secret ud"},
		second: nil,
	}, {
		name:     "the source changes: read and copied again",
		userData: "ud", objects: []client.Object{tenantSecret("ud", "v1")},
		change: func(t *testing.T, server client.Client) {
			t.Helper()
			if err := server.Update(context.Background(), tenantSecret("ud", "v2")); err != nil {
				t.Fatal(err)
			}
		},
		first:  []string{"create Secret " + userDataCopy, "get Secret ud"},
		second: []string{"get Secret " + userDataCopy, "get Secret ud", "update Secret " + userDataCopy},
	}, {
		name:     "the cache does not show the copy yet: the create fails, the copy is read",
		userData: "ud", lagging: true, objects: []client.Object{tenantSecret("ud", "v1")},
		change: func(*testing.T, client.Client) {},
		first:  []string{"create Secret " + userDataCopy, "get Secret ud"},
		second: []string{"create Secret " + userDataCopy + " (failed)", "get Secret " + userDataCopy, "get Secret ud"},
	}, {
		name:     "the claim no longer references its Secret: the copy is read and deleted",
		userData: "ud", objects: []client.Object{tenantSecret("ud", "v1")}, dropReference: true,
		first:  []string{"create Secret " + userDataCopy, "get Secret ud"},
		second: []string{"delete Secret " + userDataCopy, "get Secret " + userDataCopy},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			env := newRequestTestEnv(t, tt.lagging, tt.objects...)
			claim, host := requestTestClaim(tt.userData), requestTestHost()
			ctx := context.Background()
			if _, err := env.r.syncSecrets(ctx, claim, host); err != nil {
				t.Fatalf("first sync: %v", err)
			}
			assertRequests(t, "first sync", env.log.take(), tt.first)
			if tt.change != nil {
				tt.change(t, env.server)
			}
			if tt.dropReference {
				claim.Spec.UserData = nil
			}
			copies, err := env.r.syncSecrets(ctx, claim, host)
			if err != nil {
				t.Fatalf("second sync: %v", err)
			}
			assertRequests(t, "second sync", env.log.take(), tt.second)
			// Whatever was read or not, the copy holds the source's data.
			got := &corev1.Secret{}
			err = env.server.Get(ctx, types.NamespacedName{Namespace: "pool", Name: userDataCopy}, got)
			if claim.Spec.UserData == nil {
				if err == nil {
					t.Errorf("copy %s left behind", userDataCopy)
				}
				return
			}
			if err != nil {
				t.Fatalf("get copy: %v", err)
			}
			source := &corev1.Secret{}
			if err := env.server.Get(ctx, types.NamespacedName{Namespace: "tenant", Name: tt.userData}, source); err != nil {
				t.Fatal(err)
			}
			if string(got.Data["userData"]) != string(source.Data["userData"]) || copies[pool.UserDataPurpose] == nil {
				t.Errorf("copy holds %q, source %q (references %v)", got.Data["userData"], source.Data["userData"], copies)
			}
		})
	}
}

// TestSyncSecretsNeverOverwrites: a Secret of a copy's name not written
// for the claim is reported, not overwritten, whatever the cache shows.
func TestSyncSecretsNeverOverwrites(t *testing.T) {
	for _, lagging := range []bool{false, true} {
		t.Run(fmt.Sprintf("lagging=%v", lagging), func(t *testing.T) {
			foreign := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "pool", Name: copyName(pool.UserDataPurpose),
					Labels: map[string]string{hostclaim.ClaimUIDLabel: "another"}},
				Data: map[string][]byte{"userData": []byte("theirs")},
			}
			env := newRequestTestEnv(t, lagging, tenantSecret("ud", "ours"), foreign)
			_, err := env.r.syncSecrets(context.Background(), requestTestClaim("ud"), requestTestHost())
			var failure *syncFailure
			if !errors.As(err, &failure) {
				t.Fatalf("sync = %v, want a sync failure", err)
			}
			got := &corev1.Secret{}
			if err := env.server.Get(context.Background(), client.ObjectKeyFromObject(foreign), got); err != nil {
				t.Fatal(err)
			}
			if string(got.Data["userData"]) != "theirs" {
				t.Errorf("a Secret not written for the claim was overwritten: %q", got.Data["userData"])
			}
		})
	}
}

// TestTakeHostRequests: a claim with no Secret to copy is bound and given
// what to provision in one update, which leaves its first sync nothing to
// write; a claim with Secrets is bound first, its Secrets copied, then its
// host patched.
func TestTakeHostRequests(t *testing.T) {
	for _, tt := range []struct {
		name     string
		userData string
		objects  []client.Object
		take     []string
		sync     []string
	}{{
		name: "no Secret: one update",
		take: []string{"update BareMetalHost h"},
		sync: nil,
	}, {
		name:     "a Secret: bound, copied, then patched",
		userData: "ud", objects: []client.Object{tenantSecret("ud", "v1")},
		take: []string{"update BareMetalHost h"},
		sync: []string{"create Secret " + copyName(pool.UserDataPurpose), "get Secret ud", "patch BareMetalHost h"},
	}} {
		t.Run(tt.name, func(t *testing.T) {
			env := newRequestTestEnv(t, false, append(tt.objects, requestTestHost())...)
			ctx := context.Background()
			candidate := &bmov1alpha1.BareMetalHost{}
			if err := env.server.Get(ctx, types.NamespacedName{Namespace: "pool", Name: "h"}, candidate); err != nil {
				t.Fatal(err)
			}
			claim := requestTestClaim(tt.userData)
			host, err := env.r.takeHost(ctx, claim, candidate)
			if err != nil {
				t.Fatalf("takeHost: %v", err)
			}
			assertRequests(t, "take", env.log.take(), tt.take)
			synced, err := env.r.syncHost(ctx, claim, host)
			if err != nil {
				t.Fatalf("syncHost: %v", err)
			}
			assertRequests(t, "sync", env.log.take(), tt.sync)
			got := &bmov1alpha1.BareMetalHost{}
			if err := env.server.Get(ctx, client.ObjectKeyFromObject(candidate), got); err != nil {
				t.Fatal(err)
			}
			if !consumes(got, claim) || got.Spec.Image == nil || !got.Spec.Online || got.ResourceVersion != synced.ResourceVersion {
				t.Errorf("host after sync: consumer %v, image %v, online %v, version %s (synced %s)",
					got.Spec.ConsumerRef, got.Spec.Image, got.Spec.Online, got.ResourceVersion, synced.ResourceVersion)
			}
			if (tt.userData != "") != (got.Spec.UserData != nil) {
				t.Errorf("host user data %v, claim's %v", got.Spec.UserData, claim.Spec.UserData)
			}
		})
	}
}

func assertRequests(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: requests\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
