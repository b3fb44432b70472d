package steps

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cucumber/godog"
	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/testenv"
	"github.com/dynamoctl/dynamo-operator/operator/apply"
)

func registerCRDSteps(sc *godog.ScenarioContext, w *simWorld) {
	sc.Step(`^the CRDs served are those of `+ReleaseRef+`$`, w.crdsServedAre)
	sc.Step(`^the CRDs of `+ReleaseRef+` add no field to those of `+ReleaseRef+`$`, w.noNewFields)
	sc.Step(`^every compat object reads back as it was applied$`, w.compatReadsBack)
	sc.Step(`^every graph and component passes the served validation as stored$`, w.revalidateStored)
	sc.Step(`^the CRDs convert nothing$`, w.crdsConvertNothing)
	sc.Step(`^every graph and component reads in (v\w+)(?: and (v\w+))?$`, w.everyObjectReadsInVersions)
}

// crdsServedAre compares each CRD of the release with the one the API
// server serves: names, and each version's served/storage flags, schema,
// subresources and printer columns.
func (w *simWorld) crdsServedAre(ctx context.Context, ref string) error {
	r, err := w.Release(ctx, ref)
	if err != nil {
		return err
	}
	want, err := testenv.ReadCRDs(r.CRDs)
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
// ("DynamoGraphDeployment v1alpha1.spec.services.*.replicas"), of the
// versions keep accepts (nil: all).
func schemaPaths(crd *apiextensionsv1.CustomResourceDefinition, keep func(version string) bool) map[string]bool {
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
		if v.Schema != nil && (keep == nil || keep(v.Name)) {
			walk(crd.Spec.Names.Kind+" "+v.Name, v.Schema.OpenAPIV3Schema)
		}
	}
	return out
}

// noNewFields is the tripwire of the CRD upgrade scenario: a field new in
// a version the older release served must get a scenario that sets it on
// objects stored under the older schema (crd.feature), so the check fails,
// naming the fields, until the scenario is extended. A version the older
// release did not serve holds nothing stored under an old schema (objects
// are stored in the storage version and converted to it on read): it is
// counted as a new served version, its fields are not tripped on. A newer
// storage version is tripped on: objects written after the upgrade would be
// stored in a version the older release may not read on a downgrade.
func (w *simWorld) noNewFields(ctx context.Context, newer, older string) error {
	rn, err := w.Release(ctx, newer)
	if err != nil {
		return err
	}
	ro, err := w.Release(ctx, older)
	if err != nil {
		return err
	}
	nc, err := testenv.ReadCRDs(rn.CRDs)
	if err != nil {
		return err
	}
	oc, err := testenv.ReadCRDs(ro.CRDs)
	if err != nil {
		return err
	}
	old := map[string]bool{}
	oldCRDs := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, c := range oc {
		oldCRDs[c.Name] = c
		for p := range schemaPaths(c, nil) {
			old[p] = true
		}
	}
	// A kind the older release lacks has no object stored under an old
	// schema: it is counted, not tripped on; so is a version it lacks.
	var added, inert, newKinds, newVersions, storage []string
	total := 0
	for _, c := range nc {
		oc, ok := oldCRDs[c.Name]
		if !ok {
			newKinds = append(newKinds, c.Spec.Names.Kind)
			continue
		}
		served := servedVersions(oc)
		for _, v := range c.Spec.Versions {
			if !served[v.Name] {
				newVersions = append(newVersions, c.Spec.Names.Kind+" "+v.Name)
			}
		}
		if n, o := storageVersion(c), storageVersion(oc); n != o {
			storage = append(storage, fmt.Sprintf("%s stores %s, %s stored %s", c.Spec.Names.Kind, n, ro.Tag, o))
		}
		for p := range schemaPaths(c, func(v string) bool { return served[v] }) {
			total++
			switch {
			case old[p]:
			case inertWhileAbsent(p) != "":
				inert = append(inert, p)
			default:
				added = append(added, p)
			}
		}
	}
	sort.Strings(added)
	w.Figure("schema fields of versions "+ro.Tag+" served, in "+rn.Tag, total)
	w.Figure("schema fields new since "+ro.Tag, len(added)+len(inert))
	w.Figure("of which inert on objects stored without them", len(inert))
	sort.Strings(newKinds)
	w.Figure("kinds new since "+ro.Tag, fmt.Sprintf("%d %v", len(newKinds), newKinds))
	sort.Strings(newVersions)
	w.Figure("served versions new since "+ro.Tag, fmt.Sprintf("%d %v", len(newVersions), newVersions))
	var problems []string
	if len(storage) > 0 {
		problems = append(problems, fmt.Sprintf("%s changes the storage version of %s's CRDs (%s); say in the downgrade scenario whether %s reads what %s stores",
			rn.Tag, ro.Tag, strings.Join(storage, "; "), ro.Tag, rn.Tag))
	}
	if len(added) > 0 {
		problems = append(problems, fmt.Sprintf("%s adds %d fields to %s's CRDs; set them in crd.feature on objects stored under the old schema:\n  %s",
			rn.Tag, len(added), ro.Tag, strings.Join(head(added, 40), "\n  ")))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// newFieldsInert are fields added to a version an older release served
// that change nothing for an object stored without them, each with why.
// The scenario that trips on new fields proves it for its objects: every
// compat graph, stored under the older schema (which prunes these fields
// from what users applied), reconciled by the newer operator with no pod
// restarted or replaced and no object changed. A field not listed here
// still trips the check.
var newFieldsInert = map[string]string{
	"DynamoGraphDeployment v1alpha1.spec.restart":                       "a restart happens only when an id is set",
	"DynamoGraphDeployment v1alpha1.spec.topologyConstraint":            "placement is constrained only when set",
	"DynamoGraphDeployment v1alpha1.spec.services.*.topologyConstraint": "placement is constrained only when set",
	"DynamoGraphDeployment v1alpha1.spec.services.*.scalingAdapter":     "an adapter exists only for a service that opts in",
	"DynamoComponentDeployment v1alpha1.spec.topologyConstraint":        "placement is constrained only when set",
	"DynamoComponentDeployment v1alpha1.spec.scalingAdapter":            "an adapter owns replicas only when opted in",
	"DynamoGraphDeployment v1alpha1.status.restart":                     "written by the operator; absent, it starts nothing",
	"DynamoGraphDeployment v1alpha1.status.rollingUpdate":               "written by the operator; absent, it starts nothing",
}

// inertWhileAbsent is why the field path p, or the field it lies under,
// is inert on objects stored without it (newFieldsInert); "" when not.
func inertWhileAbsent(p string) string {
	for field, why := range newFieldsInert {
		if p == field || strings.HasPrefix(p, field+".") || strings.HasPrefix(p, field+"[") {
			return why
		}
	}
	return ""
}

// crdsConvertNothing checks that no nvidia.com CRD converts by webhook
// nor keeps anything of one: after a downgrade to a release that serves
// one version, whose installer applied its CRDs without spec.conversion,
// nothing of the newer release's webhook (not the CA bundle either) may be
// left, or the API server would have refused that apply.
func (w *simWorld) crdsConvertNothing(ctx context.Context) error {
	list := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := w.Client.List(ctx, list); err != nil {
		return err
	}
	var problems []string
	n := 0
	for _, crd := range list.Items {
		if crd.Spec.Group != "nvidia.com" {
			continue
		}
		n++
		if c := crd.Spec.Conversion; c != nil && (c.Strategy != apiextensionsv1.NoneConverter || c.Webhook != nil) {
			problems = append(problems, fmt.Sprintf("%s: conversion %+v", crd.Name, *c))
		}
	}
	w.Figure("nvidia.com CRDs converting nothing", n)
	if len(problems) > 0 {
		return fmt.Errorf("CRDs still convert:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

// servedVersions are the names of the versions a CRD serves.
func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) map[string]bool {
	out := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		if v.Served {
			out[v.Name] = true
		}
	}
	return out
}

// storageVersion is the name of the version a CRD stores objects in.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// everyObjectReadsInVersions reads every graph and component of the
// scenario's namespaces in v1 and v2 (if given), by List and by Get, with
// the dynamic client and an explicit version: a version other than the
// stored one is converted by the CRDs' conversion webhook, so each read
// there is one conversion the API server asks of the operator the CRDs
// name. The same objects (by UID) must come back in both versions.
func (w *simWorld) everyObjectReadsInVersions(ctx context.Context, v1, v2 string) error {
	dyn, err := dynamic.NewForConfig(w.Config)
	if err != nil {
		return err
	}
	versions, what := []string{v1}, v1
	if v2 != "" {
		versions, what = append(versions, v2), v1+" and "+v2
	}
	var problems []string
	n := 0
	for _, resource := range []string{"dynamographdeployments", "dynamocomponentdeployments"} {
		for _, ns := range w.graphs.namespaces {
			uids := map[string]map[string]bool{} // version -> UIDs listed
			for _, v := range versions {
				ri := dyn.Resource(schema.GroupVersionResource{Group: "nvidia.com", Version: v, Resource: resource}).Namespace(ns)
				list, err := ri.List(ctx, metav1.ListOptions{})
				if err != nil {
					problems = append(problems, fmt.Sprintf("list %s in %s/%s: %v", resource, v, ns, err))
					continue
				}
				uids[v] = map[string]bool{}
				for _, item := range list.Items {
					uids[v][string(item.GetUID())] = true
					got, err := ri.Get(ctx, item.GetName(), metav1.GetOptions{})
					if err != nil {
						problems = append(problems, fmt.Sprintf("get %s %s/%s in %s: %v", resource, ns, item.GetName(), v, err))
						continue
					}
					if got.GetAPIVersion() != "nvidia.com/"+v {
						problems = append(problems, fmt.Sprintf("get %s %s/%s in %s: read as %s", resource, ns, item.GetName(), v, got.GetAPIVersion()))
					}
					n++
				}
			}
			if a, b := uids[v1], uids[v2]; a != nil && b != nil {
				if d := cmp.Diff(a, b); d != "" {
					problems = append(problems, fmt.Sprintf("%s in %s: %s and %s list different objects (-%s +%s):\n%s", resource, ns, v1, v2, v1, v2, d))
				}
			}
		}
	}
	w.Figure("graphs and components read in "+what, n)
	if n == 0 {
		return errors.New("no graph or component to read")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%d reads failed:\n  %s", len(problems), strings.Join(head(problems, 40), "\n  "))
	}
	return nil
}

// compatReadsBack reads every object the scenario applied from the compat
// manifests and reports each field written but missing or different now.
func (w *simWorld) compatReadsBack(ctx context.Context) error {
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
func (w *simWorld) revalidateStored(ctx context.Context) error {
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
