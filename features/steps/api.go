package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/cucumber/godog"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Steps about how the API is served: discovery, kubectl columns, scale.

func registerAPISteps(sc *godog.ScenarioContext, w *world) {
	sc.Step(`^the API server serves `+quoted+` in `+quoted+` with short name `+quoted+`$`, w.servesWithShortName)
	sc.Step(`^"kubectl get (\S+)" shows the columns `+quoted+`$`, w.showsColumns)
	sc.Step(`^I scale the (\S+) `+quoted+` to (\d+)$`, w.scaleTo)
}

func (w *world) servesWithShortName(_ context.Context, resource, groupVersion, short string) error {
	dc, err := discovery.NewDiscoveryClientForConfig(w.cluster.Config)
	if err != nil {
		return err
	}
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		return fmt.Errorf("discovery of %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name != resource {
			continue
		}
		for _, s := range r.ShortNames {
			if s == short {
				return nil
			}
		}
		return fmt.Errorf("%s has short names %v, not %q", resource, r.ShortNames, short)
	}
	return fmt.Errorf("%s does not serve %s", groupVersion, resource)
}

// showsColumns asks the API server for a Table, as kubectl get does, and
// compares the column names kubectl prints without -o wide.
func (w *world) showsColumns(ctx context.Context, kind, want string) error {
	gvk, err := ResolveKind(w.cluster.Client.RESTMapper(), w.cluster.Client.Scheme(), kind)
	if err != nil {
		return err
	}
	mapping, err := w.cluster.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(w.cluster.Config)
	if err != nil {
		return err
	}
	url := fmt.Sprintf("%s/apis/%s/%s/namespaces/%s/%s", strings.TrimRight(w.cluster.Config.Host, "/"),
		gvk.Group, gvk.Version, w.namespace, mapping.Resource.Resource)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s as Table: %s: %s", url, resp.Status, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		return err
	}
	var got []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority == 0 {
			got = append(got, c.Name)
		}
	}
	if strings.Join(got, ", ") != want {
		return fmt.Errorf("kubectl get %s shows columns %q, want %q", kind, strings.Join(got, ", "), want)
	}
	return nil
}

// scaleTo changes replicas through the scale subresource, as kubectl scale
// and a HorizontalPodAutoscaler do.
func (w *world) scaleTo(ctx context.Context, kind, name string, replicas int32) error {
	gvk, err := ResolveKind(w.cluster.Client.RESTMapper(), w.cluster.Client.Scheme(), kind)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(w.namespace)
	obj.SetName(name)
	scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
	patch := client.MergeFrom(&autoscalingv1.Scale{})
	if err := w.cluster.Client.SubResource("scale").Patch(ctx, obj, patch, client.WithSubResourceBody(scale)); err != nil {
		return fmt.Errorf("scaling %s %q to %d: %w", kind, name, replicas, err)
	}
	return nil
}
