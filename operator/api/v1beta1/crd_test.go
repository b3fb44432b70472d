package v1beta1

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	fieldpath "k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/crds"
	"github.com/dynamoctl/dynamo-operator/internal/compat"
)

// A v1beta1 object cannot be created on a test API server without the
// conversion webhook (v1alpha1 is stored, and even a dry run converts to
// it), so these tests admit objects through the API server's own libraries:
// the generated CRD's v1beta1 schema prunes, defaults and validates them,
// CEL rules included, as kube-apiserver does before it converts.

// The API server's CEL limits (k8s.io/apiserver/pkg/apis/cel).
const (
	celPerCallLimit = 1000000
	celCostBudget   = 10000000
)

// admission validates v1beta1 objects of one kind against crds/.
type admission struct {
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
}

func newAdmission(t *testing.T, file string) *admission {
	t.Helper()
	raw, err := crds.FS.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != GroupVersion.Version {
			continue
		}
		var internal apiextensionsinternal.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			t.Fatal(err)
		}
		s, err := structuralschema.NewStructural(&internal)
		if err != nil {
			t.Fatal(err)
		}
		validator, _, err := apiservervalidation.NewSchemaValidator(&internal)
		if err != nil {
			t.Fatal(err)
		}
		return &admission{structural: s, validator: validator, cel: cel.NewValidator(s, true, celPerCallLimit)}
	}
	t.Fatalf("%s has no version %s", file, GroupVersion.Version)
	return nil
}

// admit is what the API server does to a create (old nil) or an update of
// obj in v1beta1 with strict field validation, up to storing it: fields the
// schema does not know are errors, nulls of non-nullable fields are dropped,
// defaults are applied, then the schema, list types and CEL rules are
// checked. obj is defaulted in place.
func (a *admission) admit(obj, old map[string]any) fieldpath.ErrorList {
	var errs fieldpath.ErrorList
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, a.structural)
	for _, path := range structuralpruning.PruneWithOptions(obj, a.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, fieldpath.Invalid(fieldpath.NewPath(path), nil, "unknown field"))
	}
	structuraldefaulting.Default(obj, a.structural)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, obj, a.validator)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, a.structural, obj)...)
	var oldObj any
	if old != nil {
		structuraldefaulting.Default(old, a.structural)
		oldObj = old
	}
	celErrs, _ := a.cel.Validate(context.Background(), nil, a.structural, obj, oldObj, celCostBudget)
	return append(errs, celErrs...)
}

// object decodes a manifest as the API server does: whole numbers are
// int64, as CEL and the schema's integer checks expect.
func object(t *testing.T, manifest string) map[string]any {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// Every DynamoGraphDeployment of Dynamo's v1beta1 manifests passes the CRD's
// v1beta1 schema and rules as a create.
func TestCompatManifestsPassTheCRDSchema(t *testing.T) {
	a := newAdmission(t, "nvidia.com_dynamographdeployments.yaml")
	docs, err := compat.Documents(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		if doc.Kind != "DynamoGraphDeployment" {
			continue
		}
		t.Run(doc.File, func(t *testing.T) {
			if errs := a.admit(object(t, string(doc.Raw)), nil); len(errs) > 0 {
				t.Errorf("rejected: %v", errs.ToAggregate())
			}
		})
	}
}

// graph is a DynamoGraphDeployment with the given components (YAML list
// items) and further spec fields.
func graph(components string, spec ...string) string {
	return fmt.Sprintf("apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\nspec:\n  components:\n%s\n%s",
		indent(components, "  "), indent(strings.Join(spec, "\n"), "  "))
}

func indent(s, prefix string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n")
}

// The graph's rules, as Dynamo's CRD states them. want is the message of
// the rule that rejects the change; empty when it is accepted.
func TestGraphRules(t *testing.T) {
	a := newAdmission(t, "nvidia.com_dynamographdeployments.yaml")
	const (
		frontend = "- {name: Frontend, type: frontend}"
		worker   = "- {name: worker, type: worker, replicas: 2}"
	)
	tests := map[string]struct {
		old, new string // old empty: a create
		want     string
	}{
		"a frontend and a worker": {new: graph(frontend + "\n" + worker)},
		"names differing only in case": {
			new:  graph("- {name: Worker}\n- {name: worker}"),
			want: "component names must be unique case-insensitively",
		},
		"the same name twice": {
			new:  graph("- {name: worker}\n- {name: worker}"),
			want: "Duplicate value",
		},
		"two epp components": {
			new:  graph("- {name: epp-a, type: epp}\n- {name: epp-b, type: epp}"),
			want: "at most one component may have type epp",
		},
		"26 components": {
			new:  graph(manyComponents(26)),
			want: "must have at most 25 items",
		},
		"a type Dynamo does not know": {
			new:  graph("- {name: w, type: main}"),
			want: "Unsupported value",
		},
		"a name that is no DNS label": {
			new:  graph("- {name: my_worker}"),
			want: "should match",
		},
		"a field the schema does not know": {
			new:  graph("- {name: w, envs: []}"),
			want: "unknown field",
		},
		"restart on create": {
			new:  graph(frontend, "restart: {id: one}"),
			want: "spec.restart must be unset on create",
		},
		"restart added by an update": {
			old: graph(frontend),
			new: graph(frontend, "restart: {id: one}"),
		},
		"eppConfig on a worker": {
			new:  graph("- {name: w, type: worker, eppConfig: {config: {}}}"),
			want: "eppConfig may only be set when type is epp",
		},
		"eppConfig with both a ConfigMap and inline config": {
			new:  graph("- {name: e, type: epp, eppConfig: {config: {}, configMapRef: {name: c, key: k}}}"),
			want: "exactly one of configMapRef or config must be specified",
		},
		"minAvailable above replicas": {
			new:  graph("- {name: w, replicas: 1, minAvailable: 2}"),
			want: "minAvailable must be less than or equal to replicas unless replicas is 0",
		},
		"minAvailable above replicas 0": {
			new: graph("- {name: w, replicas: 0, minAvailable: 2}"),
		},
		"minAvailable changed": {
			old:  graph("- {name: w, replicas: 3, minAvailable: 1}"),
			new:  graph("- {name: w, replicas: 3, minAvailable: 2}"),
			want: "minAvailable is immutable after creation",
		},
		"type changed": {
			old:  graph("- {name: w, type: worker}"),
			new:  graph("- {name: w, type: prefill}"),
			want: "type is immutable after it is set",
		},
		"type set later": {
			old: graph("- {name: w}"),
			new: graph("- {name: w, type: prefill}"),
		},
		"a checkpoint job beside a checkpointRef": {
			new:  graph("- {name: w, experimental: {checkpoint: {enabled: true, checkpointRef: snap, job: {}}}}"),
			want: "checkpoint.job cannot be set when checkpointRef is specified",
		},
		"KV transfer by both a label and a topology": {
			new:  graph(frontend, "experimental: {kvTransferPolicy: {domain: zone, labelKey: a, clusterTopologyName: t}}"),
			want: "exactly one of labelKey or clusterTopologyName is required",
		},
		"a preferred KV transfer without a weight": {
			new:  graph(frontend, "experimental: {kvTransferPolicy: {domain: zone, labelKey: a, enforcement: preferred}}"),
			want: "preferredWeight is required when enforcement is preferred",
		},
		// Manifests and the tools templating them write optional fields as
		// null; every rule reads a null as a field left out.
		"null eppConfig on a worker": {new: graph("- {name: w, type: worker, eppConfig: null}")},
		"null minAvailable":          {new: graph("- {name: w, replicas: 1, minAvailable: null}")},
		"null replicas":              {new: graph("- {name: w, replicas: null, minAvailable: 1}")},
		"null type beside an epp":    {new: graph("- {name: w, type: null}\n- {name: e, type: epp}")},
		"null restart on create":     {new: graph(frontend, "restart: null")},
		"null checkpointRef":         {new: graph("- {name: w, experimental: {checkpoint: {enabled: true, checkpointRef: null, job: {}}}}")},
		"null labelKey":              {new: graph(frontend, "experimental: {kvTransferPolicy: {domain: zone, labelKey: null, clusterTopologyName: t}}")},
		"null components":            {new: "apiVersion: nvidia.com/v1beta1\nkind: DynamoGraphDeployment\nmetadata: {name: g}\nspec: {components: null}"},
		"type removed by a null": {
			old:  graph("- {name: w, type: worker}"),
			new:  graph("- {name: w, type: null}"),
			want: "type is immutable after it is set",
		},
		"GMS client pods": {
			new:  graph("- {name: w, experimental: {gpuMemoryService: {mode: InterPod, extraClientPods: [{name: c, podTemplate: {}}]}}}"),
			want: "extraClientPods is reserved for inter-pod GMS and is not implemented yet",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var old map[string]any
			if tc.old != "" {
				old = object(t, tc.old)
			}
			errs := a.admit(object(t, tc.new), old)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Errorf("rejected: %v", got)
			case tc.want != "" && got == nil:
				t.Errorf("accepted, want %q", tc.want)
			case tc.want != "" && !strings.Contains(got.Error(), tc.want):
				t.Errorf("rejected with %v, want %q", got, tc.want)
			}
		})
	}
}

func manyComponents(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "- {name: c%d}\n", i)
	}
	return b.String()
}

// The schema's defaults, as Dynamo's CRD states them.
func TestGraphDefaults(t *testing.T) {
	a := newAdmission(t, "nvidia.com_dynamographdeployments.yaml")
	obj := object(t, graph("- {name: w, multinode: {}, experimental: {gpuMemoryService: {}, failover: {}, checkpoint: {enabled: true}}}",
		"restart: {id: x, strategy: {}}"))
	old := object(t, graph("- {name: w}"))
	if errs := a.admit(obj, old); len(errs) > 0 {
		t.Fatal(errs.ToAggregate())
	}
	want := object(t, graph(`- name: w
  multinode: {nodeCount: 2}
  experimental:
    gpuMemoryService: {mode: IntraPod, deviceClassName: gpu.nvidia.com}
    failover: {mode: IntraPod, numShadows: 1}
    checkpoint: {enabled: true, startupPolicy: Immediate, deletionPolicy: Delete, targetContainerName: main}`,
		"restart: {id: x, strategy: {type: Sequential}}"))
	if diff := cmp.Diff(want, obj); diff != "" {
		t.Errorf("defaulted (-want +got):\n%s", diff)
	}
}
