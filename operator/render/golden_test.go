package render

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
)

// update rewrites the golden files from the current rendering instead of
// comparing with them: `go test ./operator/render -run TestGolden -update`
// (or `make golden`), then review the diff as part of the change.
var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current rendering")

// goldenNamespace stands in for the namespace of manifests that name none.
const goldenNamespace = "compat"

// goldenOptions are the operator settings the golden files are rendered
// with: none, as Dynamo's operator ran for ../shared/migration (Kubernetes
// discovery, no NATS or etcd address).
var goldenOptions = Options{}

// renderGraph renders every object the operator creates for a graph, in a
// fixed order: the components, then per component its Deployment (or
// LeaderWorkerSet and its groups' gang PodGroups), Service,
// model Service, Ingress, GPU memory service claim template and endpoint
// picker ConfigMap, then the claims, then the discovery objects.
// Objects carry no owner references and no server-set fields: the
// controllers and the API server add those.
func renderGraph(t *testing.T, dgd *v1alpha1.DynamoGraphDeployment) []any {
	t.Helper()
	dcds, err := Components(dgd)
	if err != nil {
		t.Fatalf("%s: Components: %v", dgd.Name, err)
	}
	var objs []any
	for _, dcd := range dcds {
		objs = append(objs, dcd)
	}
	for _, dcd := range dcds {
		var workload any
		var err error
		if IsMultinode(dcd) {
			workload, err = LeaderWorkerSet(dcd, dgd.Spec.PVCs, goldenOptions)
		} else {
			workload, err = Deployment(dcd, dgd.Spec.PVCs, goldenOptions)
		}
		if err != nil {
			t.Fatalf("%s: workload of %s: %v", dgd.Name, dcd.Name, err)
		}
		objs = append(objs, workload)
		for _, pg := range PodGroups(dcd) {
			objs = append(objs, pg.Object)
		}
		objs = append(objs, Service(dcd))
		if s := ModelService(dcd); s != nil {
			objs = append(objs, s)
		}
		if i := Ingress(dcd); i != nil {
			objs = append(objs, i)
		}
		if t := GMSResourceClaimTemplate(dcd); t != nil {
			objs = append(objs, t)
		}
		cm, err := EPPConfigMap(dcd)
		if err != nil {
			t.Fatalf("%s: EPP ConfigMap of %s: %v", dgd.Name, dcd.Name, err)
		}
		if cm != nil {
			objs = append(objs, cm)
		}
	}
	if pool := InferencePool(EndpointPicker(dcds)); pool != nil {
		objs = append(objs, pool.Object)
	}
	for _, pvc := range PVCs(dgd) {
		objs = append(objs, pvc)
	}
	if d := GraphDiscoveryRBAC(dgd); d != nil {
		objs = append(objs, d.ServiceAccount, d.Role, d.RoleBinding)
	}
	return objs
}

func goldenYAML(t *testing.T, objs []any) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		buf.WriteString("---\n")
		buf.Write(b)
	}
	return buf.Bytes()
}

// TestGolden renders every graph of ../shared/compat and compares the
// objects, whole, with testdata/<manifest path>.golden.yaml. A rendering
// change shows up here as a diff to review; every existing workload would
// roll on an operator upgrade that carries it.
func TestGolden(t *testing.T) {
	byFile := map[string][]*v1alpha1.DynamoGraphDeployment{}
	var files []string
	for _, g := range compatGraphs(t) {
		var dgd v1alpha1.DynamoGraphDeployment
		if err := yaml.UnmarshalStrict(g.doc, &dgd); err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		if dgd.Namespace == "" {
			dgd.Namespace = goldenNamespace
		}
		if _, seen := byFile[g.file]; !seen {
			files = append(files, g.file)
		}
		byFile[g.file] = append(byFile[g.file], &dgd)
	}
	graphs := 0
	for _, file := range files {
		golden := filepath.Join("testdata", strings.TrimSuffix(strings.TrimSuffix(file, ".yaml"), ".yml")+".golden.yaml")
		t.Run(file, func(t *testing.T) {
			var objs []any
			for _, dgd := range byFile[file] {
				objs = append(objs, renderGraph(t, dgd)...)
				graphs++
			}
			got := goldenYAML(t, objs)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run `make golden` to write it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("rendering differs from %s (-golden +now); if intended, run `make golden` and review the diff:\n%s", golden, diff)
			}
		})
	}
	t.Logf("compared %d graphs of %d manifests", graphs, len(files))

	// A golden file without a manifest is a graph no longer checked.
	if !*update {
		_ = filepath.WalkDir("testdata", func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".golden.yaml") {
				return err
			}
			rel, _ := filepath.Rel("testdata", path)
			if _, ok := byFile[strings.TrimSuffix(rel, ".golden.yaml")+".yaml"]; !ok {
				t.Errorf("%s has no manifest under ../shared/compat any more: delete it", path)
			}
			return nil
		})
	}
}
