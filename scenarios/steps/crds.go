package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dynamoctl/dynamo-operator/operator/apply"
)

func init() { Register(registerCRDSteps) }

func registerCRDSteps(w *World, sc *godog.ScenarioContext) {
	sc.Step(`^the CRDs served are those of `+ReleaseRef+`$`, w.crdsServedAre)
	sc.Step(`^the CRDs of `+ReleaseRef+` add no field to those of `+ReleaseRef+`$`, w.noNewFields)
	sc.Step(`^every compat object reads back as it was applied$`, w.compatReadsBack)
	sc.Step(`^every graph and component passes the served validation as stored$`, w.revalidateStored)
}

// releaseCRDs reads a release's crds/*.yaml.
func releaseCRDs(dir string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s: %v", dir, err)
	}
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// crdsServedAre compares each CRD of the release with the one the API
// server serves: names, and each version's served/storage flags, schema,
// subresources and printer columns.
func (w *World) crdsServedAre(ctx context.Context, ref string) error {
	r, err := w.Release(ctx, ref)
	if err != nil {
		return err
	}
	want, err := releaseCRDs(r.CRDs)
	if err != nil {
		return err
	}
	var problems []string
	for _, crd := range want {
		live := &apiextensionsv1.CustomResourceDefinition{}
		if err := w.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, live); err != nil {
			problems = append(problems, crd.Name+": "+err.Error())
			continue
		}
		if d := cmp.Diff(crd.Spec.Names, live.Spec.Names); d != "" {
			problems = append(problems, crd.Name+" names (-release +served):\n"+d)
		}
		if d := cmp.Diff(crd.Spec.Versions, live.Spec.Versions); d != "" {
			problems = append(problems, crd.Name+" versions (-release +served):\n"+d)
		}
	}
	w.Figure("CRDs compared with "+r.Tag, len(want))
	if len(problems) > 0 {
		return fmt.Errorf("the served CRDs are not those of %s:\n%s", r.Tag, strings.Join(problems, "\n"))
	}
	return nil
}

// schemaPaths lists every field path of a CRD's schemas, per version
// ("v1alpha1 spec.services.*.replicas").
func schemaPaths(crd *apiextensionsv1.CustomResourceDefinition) map[string]bool {
	out := map[string]bool{}
	var walk func(prefix string, s *apiextensionsv1.JSONSchemaProps)
	walk = func(prefix string, s *apiextensionsv1.JSONSchemaProps) {
		if s == nil {
			return
		}
		out[prefix] = true
		for name, p := range s.Properties {
			walk(prefix+"."+name, &p)
		}
		if s.Items != nil {
			walk(prefix+"[]", s.Items.Schema)
		}
		if s.AdditionalProperties != nil {
			walk(prefix+".*", s.AdditionalProperties.Schema)
		}
	}
	for _, v := range crd.Spec.Versions {
		if v.Schema != nil {
			walk(crd.Spec.Names.Kind+" "+v.Name, v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

// noNewFields is the tripwire of the CRD upgrade scenario: a field new in
// the newer release must get a scenario that sets it on objects stored
// under the older schema (crd.feature), so the check fails, naming the
// fields, until the scenario is extended.
func (w *World) noNewFields(ctx context.Context, newer, older string) error {
	rn, err := w.Release(ctx, newer)
	if err != nil {
		return err
	}
	ro, err := w.Release(ctx, older)
	if err != nil {
		return err
	}
	nc, err := releaseCRDs(rn.CRDs)
	if err != nil {
		return err
	}
	oc, err := releaseCRDs(ro.CRDs)
	if err != nil {
		return err
	}
	old, oldKinds := map[string]bool{}, map[string]bool{}
	for _, c := range oc {
		oldKinds[c.Name] = true
		for p := range schemaPaths(c) {
			old[p] = true
		}
	}
	// A kind the older release lacks has no object stored under an old
	// schema: it is counted, not tripped on.
	var added, newKinds []string
	total := 0
	for _, c := range nc {
		if !oldKinds[c.Name] {
			newKinds = append(newKinds, c.Spec.Names.Kind)
			continue
		}
		for p := range schemaPaths(c) {
			total++
			if !old[p] {
				added = append(added, p)
			}
		}
	}
	sort.Strings(added)
	w.Figure("schema fields in "+rn.Tag, total)
	w.Figure("schema fields new since "+ro.Tag, len(added))
	sort.Strings(newKinds)
	w.Figure("kinds new since "+ro.Tag, fmt.Sprintf("%d %v", len(newKinds), newKinds))
	if len(added) > 0 {
		return fmt.Errorf("%s adds %d fields to %s's CRDs; set them in crd.feature on objects stored under the old schema:\n  %s",
			rn.Tag, len(added), ro.Tag, strings.Join(head(added, 40), "\n  "))
	}
	return nil
}

// compatReadsBack reads every object the scenario applied from the compat
// manifests and reports each field written but missing or different now.
func (w *World) compatReadsBack(ctx context.Context) error {
	manifests, files, err := w.CompatManifests()
	if err != nil {
		return err
	}
	var problems []string
	n := 0
	for _, rel := range files {
		ns := compatNamespace(rel)
		for _, want := range manifests[rel] {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			if err := w.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: want.GetName()}, got); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %s %s: %v", rel, want.GetKind(), want.GetName(), err))
				continue
			}
			n++
			wantObj := want.DeepCopy()
			unstructured.RemoveNestedField(wantObj.Object, "metadata", "namespace")
			for _, d := range apply.Diff(got.Object, wantObj.Object) {
				problems = append(problems, fmt.Sprintf("%s: %s %s: %s", rel, want.GetKind(), want.GetName(), d))
			}
		}
	}
	w.Figure("compat objects read back", n)
	if len(problems) > 0 {
		return fmt.Errorf("%d stored fields differ from what was applied:\n  %s", len(problems), strings.Join(head(problems, 40), "\n  "))
	}
	return nil
}

// revalidateStored sends every stored graph and component back unchanged
// as a dry-run update: the served schema and the running operator's
// webhooks judge it as stored under the old schema.
func (w *World) revalidateStored(ctx context.Context) error {
	var problems []string
	n := 0
	for _, kind := range []string{"DynamoGraphDeployment", "DynamoComponentDeployment"} {
		for _, ns := range w.graphs.namespaces {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("nvidia.com/v1alpha1")
			list.SetKind(kind + "List")
			if err := w.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			for i := range list.Items {
				obj := &list.Items[i]
				n++
				if err := w.Client.Update(ctx, obj, client.DryRunAll); err != nil {
					problems = append(problems, fmt.Sprintf("%s %s/%s: %v", kind, ns, obj.GetName(), err))
				}
			}
		}
	}
	w.Figure("stored objects revalidated", n)
	if n == 0 {
		return fmt.Errorf("no stored graphs or components to revalidate")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d of %d stored objects fail the served validation:\n  %s", len(problems), n, strings.Join(head(problems, 20), "\n  "))
	}
	return nil
}
