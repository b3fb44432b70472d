package benchmarks

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// watcher follows one namespace's graphs and children through watches. The
// benchmark's progress checks read it instead of listing thousands of
// objects from the API server four times a second, which cost the API
// server, in the operator's run only, more than the writes it measures.
type watcher struct {
	cache  cache.Cache
	cancel context.CancelFunc
}

// watchNamespace watches ns; t, when not nil, records the statuses of its
// components and graphs.
func watchNamespace(ctx context.Context, env *benchCluster, ns string, t *trail) (*watcher, error) {
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &watcher{cache: c, cancel: cancel}
	// Ask for every informer before the cache starts, so it syncs them all;
	// status, when set, is what the trail records of the kind.
	for _, watched := range []struct {
		obj    client.Object
		status statusOf
	}{
		{&v1alpha1.DynamoGraphDeployment{}, graphStatus},
		{&v1alpha1.DynamoComponentDeployment{}, componentStatus},
		{&appsv1.Deployment{}, nil},
		{&corev1.Service{}, nil},
	} {
		inf, err := c.GetInformer(ctx, watched.obj)
		if err != nil {
			cancel()
			return nil, err
		}
		if t == nil || watched.status == nil {
			continue
		}
		if _, err := inf.AddEventHandler(t.handler(watched.status)); err != nil {
			cancel()
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("the benchmark's watches of %s did not sync", ns)
	}
	return w, nil
}

func (w *watcher) stop() { w.cancel() }

// created is when the watched graph (kind "graph") or Deployment (any
// other kind) key was created; zero when it is not in the cache.
func (w *watcher) created(ctx context.Context, kind string, key types.NamespacedName) time.Time {
	var obj client.Object = &appsv1.Deployment{}
	if kind == "graph" {
		obj = &v1alpha1.DynamoGraphDeployment{}
	}
	if err := w.cache.Get(ctx, key, obj); err != nil {
		return time.Time{}
	}
	return obj.GetCreationTimestamp().Time
}

// list reads the watched objects without copying them: the checks only read.
func (w *watcher) list(ctx context.Context, list client.ObjectList) error {
	return w.cache.List(ctx, list, client.UnsafeDisableDeepCopy)
}

// profiler saves CPU profiles of the operator and of the API server, in
// back-to-back windows (the API server ends a request after 60 s), until
// stopped: go tool pprof -top dir/operator-*.pprof merges them.
type profiler struct {
	stopOnce sync.Once
	stopped  chan struct{}
	wg       sync.WaitGroup
}

const profileWindow = 30 * time.Second

func startProfiles(dir, operatorAddr string, apiserver *rest.Config) (*profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	apiClient, err := rest.HTTPClientFor(apiserver)
	if err != nil {
		return nil, err
	}
	p := &profiler{stopped: make(chan struct{})}
	targets := []struct {
		name string
		url  string
		c    *http.Client
	}{
		{"operator", "http://" + operatorAddr + "/debug/pprof/profile", http.DefaultClient},
		{"apiserver", strings.TrimSuffix(apiserver.Host, "/") + "/debug/pprof/profile", apiClient},
	}
	for _, t := range targets {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for i := 0; ; i++ {
				select {
				case <-p.stopped:
					return
				default:
				}
				url := fmt.Sprintf("%s?seconds=%d", t.url, int(profileWindow.Seconds()))
				if err := saveURL(t.c, url, filepath.Join(dir, fmt.Sprintf("%s-%02d.pprof", t.name, i))); err != nil {
					fmt.Fprintf(os.Stderr, "profile of the %s: %v\n", t.name, err)
					return
				}
			}
		}()
	}
	return p, nil
}

// stop ends the profiles after the window under way.
func (p *profiler) stop() {
	p.stopOnce.Do(func() { close(p.stopped) })
	p.wg.Wait()
}

func saveURL(c *http.Client, url, path string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
