package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint asks the API server who a scraper is (TokenReview)
// and whether it may "get" the path (SubjectAccessReview), as
// controller-runtime's filters.WithAuthenticationAndAuthorization does, with
// that filter's cache lifetimes. That filter is not used because it brings
// in the API server's own authentication stack (k8s.io/apiserver, CEL, gRPC,
// OpenTelemetry): the binary was 80 MB instead of 51, and 16 MiB more of it
// stayed resident, for two API calls. See docs/design/observability.md.
const (
	// authnCacheTTL is how long a token's review is trusted.
	authnCacheTTL = time.Minute
	// authzAllowTTL and authzDenyTTL are how long a decision is trusted.
	authzAllowTTL = 5 * time.Minute
	authzDenyTTL  = 30 * time.Second
	// reviewTimeout bounds each review request.
	reviewTimeout = 10 * time.Second
	// maxCached bounds each cache: scrapers are few, and callers with made-up
	// tokens must not grow it.
	maxCached = 1024
)

// scraperAuth authenticates and authorizes the callers of /metrics.
type scraperAuth struct {
	tokens  authenticationclient.TokenReviewInterface
	access  authorizationclient.SubjectAccessReviewInterface
	clock   clock.PassiveClock
	authn   ttlCache[authenticationv1.TokenReviewStatus]
	authz   ttlCache[decision]
	timeout time.Duration
}

type decision struct {
	allowed bool
	reason  string
}

// scraperFilter returns the metrics server's FilterProvider.
func scraperFilter(clk clock.PassiveClock) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return func(cfg *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
		authn, err := authenticationclient.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, err
		}
		authz, err := authorizationclient.NewForConfigAndClient(cfg, hc)
		if err != nil {
			return nil, err
		}
		a := &scraperAuth{tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), clock: clk, timeout: reviewTimeout}
		return a.filter, nil
	}
}

func (a *scraperAuth) filter(log logr.Logger, next http.Handler) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		token, ok := bearerToken(req)
		if !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		user, err := a.authenticate(req.Context(), token)
		if err != nil {
			log.Error(err, "authenticating a metrics scraper")
			http.Error(w, "Authentication failed", http.StatusInternalServerError)
			return
		}
		if !user.Authenticated {
			log.V(4).Info("metrics scraper not authenticated", "error", user.Error)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		// As the API server names the verb of a non-resource request.
		verb := strings.ToLower(req.Method)
		d, err := a.authorize(req.Context(), user.User, verb, req.URL.Path)
		if err != nil {
			msg := fmt.Sprintf("Authorization for user %s failed", user.User.Username)
			log.Error(err, msg)
			http.Error(w, msg, http.StatusInternalServerError)
			return
		}
		if !d.allowed {
			msg := fmt.Sprintf("Authorization denied for user %s", user.User.Username)
			log.V(4).Info(msg, "reason", d.reason)
			http.Error(w, msg, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, req)
	}), nil
}

func bearerToken(req *http.Request) (string, bool) {
	auth := strings.TrimSpace(req.Header.Get("Authorization"))
	scheme, token, found := strings.Cut(auth, " ")
	if !found || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// authenticate reviews token, or answers from the cache.
func (a *scraperAuth) authenticate(ctx context.Context, token string) (authenticationv1.TokenReviewStatus, error) {
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
	now := a.clock.Now()
	if s, ok := a.authn.get(key, now); ok {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	review, err := a.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.TokenReviewStatus{}, err
	}
	a.authn.put(key, review.Status, now, authnCacheTTL)
	return review.Status, nil
}

// authorize asks whether user may verb path, or answers from the cache.
func (a *scraperAuth) authorize(ctx context.Context, user authenticationv1.UserInfo, verb, path string) (decision, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	// The whole review, as the API server's webhook authorizer keys its
	// cache: groups and extra values cannot run into each other.
	keyJSON, err := json.Marshal(spec)
	if err != nil {
		return decision{}, err
	}
	key := string(keyJSON)
	now := a.clock.Now()
	if d, ok := a.authz.get(key, now); ok {
		return d, nil
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	review, err := a.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return decision{}, err
	}
	d := decision{allowed: review.Status.Allowed && !review.Status.Denied, reason: review.Status.Reason}
	ttl := authzDenyTTL
	if d.allowed {
		ttl = authzAllowTTL
	}
	a.authz.put(key, d, now, ttl)
	return d, nil
}

// ttlCache is a small map whose entries expire; when full, expired entries
// are swept, and if it is still full an arbitrary one goes.
type ttlCache[V any] struct {
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func (c *ttlCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

func (c *ttlCache[V]) put(key string, value V, now time.Time, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[string]ttlEntry[V]{}
	}
	if _, ok := c.entries[key]; !ok && len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		// Still full: one goes, so that callers with made-up tokens
		// cannot keep real scrapers out of the cache.
		for k := range c.entries {
			delete(c.entries, k)
			break
		}
	}
	c.entries[key] = ttlEntry[V]{value: value, expires: now.Add(ttl)}
}
