package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/internal/builders"
	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

const chartFiles = "chart/dynamo-platform/charts/dynamo-operator/files"

// Every panel of the dashboard and every alert the chart ships is
// evaluated by Prometheus's own PromQL engine on two real scrapes of the
// operator, taken around a burst of work: graphs created, one scaled, one
// refused by the webhook, one deleted. Each expression must parse and
// evaluate; each panel must return data.
func TestDashboardAndAlertsEvaluateOnRealScrapes(t *testing.T) {
	r := operator(t)
	ctx := context.Background()
	ns := env.Namespace(t, "dash")
	gone := env.Namespace(t, "dash-gone")

	graph := func(name, namespace string) *v1alpha1.DynamoGraphDeployment {
		return builders.MakeGraph(name, namespace).
			Service("Frontend", builders.MakeService().Type(v1alpha1.ComponentTypeFrontend)).
			Service("Worker", builders.MakeService().GPUs(1)).Obj()
	}
	for _, g := range []*v1alpha1.DynamoGraphDeployment{graph("a", ns), graph("b", ns), graph("c", ns), graph("lone", gone)} {
		if err := env.Client.Create(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	waitForState(t, ns, "a", v1alpha1.GraphStateSuccessful)
	waitForState(t, ns, "b", v1alpha1.GraphStateSuccessful)

	store := newScrapeStore()
	first, err := r.scrape(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.add(first, time.Now()); err != nil {
		t.Fatal(err)
	}

	// Create d, scale a, have an update of b refused, delete c and the
	// only graph of the other namespace: every operation the dashboard
	// shows happens between the two scrapes.
	if err := env.Client.Create(ctx, graph("d", ns)); err != nil {
		t.Fatal(err)
	}
	patch(t, ns, "a", `{"spec":{"services":{"Worker":{"replicas":3}}}}`)
	err = env.Client.Patch(ctx, &v1alpha1.DynamoGraphDeployment{ObjectMeta: objectMeta(ns, "b")},
		client.RawPatch(types.MergePatchType, []byte(`{"spec":{"services":{"Worker":{"resources":{"limits":{"gpu":"0.5"}}}}}}`)))
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Fatalf("an update with gpu 0.5 was not refused by the webhook: %v", err)
	}
	for _, key := range []types.NamespacedName{{Namespace: ns, Name: "c"}, {Namespace: gone, Name: "lone"}} {
		if err := env.Client.Delete(ctx, &v1alpha1.DynamoGraphDeployment{ObjectMeta: objectMeta(key.Namespace, key.Name)}); err != nil {
			t.Fatal(err)
		}
	}
	waitForReplicas(t, ns, "a-worker", 3)
	waitForState(t, ns, "a", v1alpha1.GraphStateSuccessful)
	waitForState(t, ns, "d", v1alpha1.GraphStateSuccessful)

	var second []byte
	await.New(t).Eventually(func() error {
		second, err = r.scrape(ctx)
		if err != nil {
			return err
		}
		if strings.Contains(string(second), `namespace="`+gone+`"`) {
			return fmt.Errorf("a series of %s is still exported", gone)
		}
		return nil
	}).Should(gomega.Succeed(), "the deleted graph's namespace leaves resources_total")
	now := time.Now()
	if err := store.add(second, now); err != nil {
		t.Fatal(err)
	}
	t.Logf("scrape: %d bytes, %d series in the store; metric names: %s", len(second), len(store.series), strings.Join(store.names(), " "))

	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e6, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	known := map[string]bool{}
	for _, n := range store.names() {
		known[n] = true
	}
	for _, p := range dashboardQueries(t) {
		t.Run("panel "+p.name, func(t *testing.T) {
			v := evaluate(t, engine, store, p.expr, now, known)
			if len(v) == 0 {
				t.Fatalf("%s returns no data", p.expr)
			}
			for _, s := range v {
				if math.IsNaN(s.F) {
					t.Errorf("%s returns NaN for %s", p.expr, s.Metric)
				}
			}
			t.Logf("%s -> %d series", p.expr, len(v))
		})
	}
	for _, a := range alertQueries(t) {
		t.Run("alert "+a.name, func(t *testing.T) {
			v := evaluate(t, engine, store, a.expr, now, known)
			t.Logf("%s -> %d series firing", a.name, len(v))
		})
	}
}

// evaluate parses expr, checks every metric it names was scraped, and
// returns its instant value at ts.
func evaluate(t *testing.T, engine *promql.Engine, store *scrapeStore, expr string, ts time.Time, known map[string]bool) promql.Vector {
	t.Helper()
	parsed, err := parser.ParseExpr(expr)
	if err != nil {
		t.Fatalf("%s does not parse: %v", expr, err)
	}
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok && !known[vs.Name] {
			t.Errorf("%s names %s, which the operator does not export", expr, vs.Name)
		}
		return nil
	})
	q, err := engine.NewInstantQuery(context.Background(), store, nil, expr, ts)
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	defer q.Close()
	res := q.Exec(context.Background())
	if res.Err != nil {
		t.Fatalf("%s does not evaluate: %v", expr, res.Err)
	}
	v, err := res.Vector()
	if err != nil {
		t.Fatalf("%s is not an instant vector: %v", expr, err)
	}
	return v
}

type namedQuery struct{ name, expr string }

// dashboardQueries reads every panel's targets, with Grafana's variables
// set as a user picking "All" would.
func dashboardQueries(t *testing.T) []namedQuery {
	t.Helper()
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(readChartFile(t, "grafana-dashboard.json"), &dash); err != nil {
		t.Fatal(err)
	}
	vars := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "$resource_type", ".*")
	var out []namedQuery
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			expr := vars.Replace(tg.Expr)
			if strings.Contains(expr, "$") {
				t.Errorf("panel %q uses a variable the test does not know: %s", p.Title, tg.Expr)
			}
			out = append(out, namedQuery{fmt.Sprintf("%s/%d", p.Title, i), expr})
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d panel queries in the dashboard", len(out))
	}
	return out
}

// alertQueries reads every alert of the rule groups.
func alertQueries(t *testing.T) []namedQuery {
	t.Helper()
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(readChartFile(t, "prometheus-rules.yaml"), &rules); err != nil {
		t.Fatal(err)
	}
	var out []namedQuery
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("a rule without alert name or expression: %+v", r)
			}
			out = append(out, namedQuery{r.Alert, r.Expr})
		}
	}
	if len(out) < 4 {
		t.Fatalf("only %d alerts", len(out))
	}
	return out
}

func readChartFile(t *testing.T, name string) []byte {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, chartFiles, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
