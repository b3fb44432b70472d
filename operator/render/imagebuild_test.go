package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/internal/builders"
)

// TestGoldenBuildJobs compares the rendered build Jobs whole with the golden
// files testdata/buildjobs/<case>.yaml (not *.golden.yaml: TestGolden owns
// those, one per compat manifest); -update rewrites them.
func TestGoldenBuildJobs(t *testing.T) {
	full := builders.MakeDynamoComponent("frontend--v2", "team", "frontend:v2").
		Timeout(90*time.Second).BuildArgs("PIP_INDEX=https://pypi.example", "DEBUG=1").
		PushSecret("registry-push").PullSecret("nvcr").PodAnnotation("team", "llm").
		BuilderEnv("HTTP_PROXY", "http://proxy:3128").NodeSelector("pool", "cpu").Obj()
	for name, tc := range map[string]struct {
		o ImageBuildOptions
	}{
		"buildkit-daemonless": {ImageBuildOptions{DockerRegistryServer: "registry.example:5000", RepositoryName: "dynamo-components",
			DockerRegistrySecure: true, APIStoreEndpoint: "http://dynamo-store.dynamo"}},
		"buildkit-remote-estargz-insecure": {ImageBuildOptions{Engine: BuildEngineBuildKit, BuildkitURL: "tcp://buildkitd:1234",
			BuildkitImage: "moby/buildkit:v0.20.0", DockerRegistryServer: "registry.example:5000", RepositoryName: "dynamo",
			EstargzEnabled: true, AddNamespacePrefixToImage: true, Namespace: "builds", APIStoreEndpoint: "http://dynamo-store.dynamo"}},
		"kaniko-insecure": {ImageBuildOptions{Engine: BuildEngineKaniko, DockerRegistryServer: "registry.example:5000",
			RepositoryName: "dynamo-components", APIStoreEndpoint: "http://dynamo-store.dynamo"}},
	} {
		t.Run(name, func(t *testing.T) {
			job, err := BuildJob(full, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := yaml.Marshal(job)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "buildjobs", name+".yaml")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs (-want +got); rerun with -update if intended:\n%s", path, cmp.Diff(string(want), string(got)))
			}
		})
	}
}

func TestBuildJobRefusesBadSpec(t *testing.T) {
	dc := builders.MakeDynamoComponent("x", "team", "frontend:v1").BuildArgs("NOEQUALS").Obj()
	_, err := BuildJob(dc, ImageBuildOptions{})
	if err == nil || !strings.Contains(err.Error(), "spec.buildArgs[0]") || !strings.Contains(err.Error(), "KEY=VALUE") {
		t.Fatalf("BuildJob: got %v, want an error naming spec.buildArgs[0] and KEY=VALUE", err)
	}
}

func TestBuildJobNameFollowsSpec(t *testing.T) {
	a := builders.MakeDynamoComponent("frontend--v1", "team", "frontend:v1").Obj()
	b := builders.MakeDynamoComponent("frontend--v1", "team", "frontend:v1").BuildArgs("A=1").Obj()
	long := builders.MakeDynamoComponent(strings.Repeat("a", 120)+"--v1", "team", strings.Repeat("a", 120)+":v1").Obj()
	o := ImageBuildOptions{}
	if BuildJobName(a, o) == BuildJobName(b, o) {
		t.Errorf("a changed spec kept the Job name %s", BuildJobName(a, o))
	}
	if BuildJobName(a, o) != BuildJobName(a.DeepCopy(), o) {
		t.Errorf("the Job name is not stable")
	}
	if n := BuildJobName(long, o); len(validation.IsDNS1123Label(n)) > 0 {
		t.Errorf("Job name %q is not a DNS-1123 label: %v", n, validation.IsDNS1123Label(n))
	}
}

func TestDynamoComponentName(t *testing.T) {
	for ref, want := range map[string]string{
		"frontend:jh2o6dqzpsgfued4": "frontend--jh2o6dqzpsgfued4", // Dynamo's documented example
		"llm.agg:v1.2":              "llm.agg--v1.2",
	} {
		if got := DynamoComponentName(ref); got != want {
			t.Errorf("DynamoComponentName(%q) = %q, want %q", ref, got, want)
		}
	}
	// Capitals and underscores cannot be in a name: lowercased, replaced,
	// and told apart by a digest.
	a, b := DynamoComponentName("frontend:ABC_1"), DynamoComponentName("frontend:abc-1")
	if a == b || !strings.HasPrefix(a, "frontend--abc-1-") || len(validation.IsDNS1123Subdomain(a)) > 0 {
		t.Errorf("DynamoComponentName: %q and %q", a, b)
	}
}

func TestBuiltImage(t *testing.T) {
	dc := builders.MakeDynamoComponent("frontend--v2", "team", "frontend:v2").Obj()
	for _, tc := range []struct {
		o    ImageBuildOptions
		want string
	}{
		{ImageBuildOptions{}, "dynamo-components:frontend-v2"},
		{ImageBuildOptions{DockerRegistryServer: "nvcr.io/nvidia/", RepositoryName: "dynamo"}, "nvcr.io/nvidia/dynamo:frontend-v2"},
		{ImageBuildOptions{DockerRegistryServer: "r:5000", RepositoryName: "dynamo", AddNamespacePrefixToImage: true}, "r:5000/team/dynamo:frontend-v2"},
	} {
		if got := BuiltImage(dc, tc.o); got != tc.want {
			t.Errorf("BuiltImage(%+v) = %q, want %q", tc.o, got, tc.want)
		}
	}
}
