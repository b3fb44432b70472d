package nodes

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	kwokconfig "sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/utils/gotpl"
	"sigs.k8s.io/kwok/pkg/utils/lifecycle"
	kwokyaml "sigs.k8s.io/kwok/pkg/utils/yaml"
)

// update rewrites testdata/<stage>/output.yaml from the stages instead of
// comparing with them: `make golden`, or
// `go test ./sim/nodes -run TestStageGolden -update`.
var update = flag.Bool("update", false, "rewrite testdata/<stage>/output.yaml from the current stages")

// goldenReadyDelay is the pod-ready delay the stages are tested with, so
// that the goldens show where Stages sets it.
const goldenReadyDelay = 1500 * time.Millisecond

// TestStageGolden runs the object in testdata/<stage>/input.yaml through
// the simulator's stage of that name, as Stages loads it, with KWOK's own
// evaluator (sigs.k8s.io/kwok/pkg/utils/lifecycle, as KWOK's
// kustomize/stage tests do): whether its selector takes the object, its
// delay and weight, and the patches its next-state template renders, with
// the functions that ask the controller (Now, the IP pools) shown by name
// and arguments. The result must equal testdata/<stage>/output.yaml.
func TestStageGolden(t *testing.T) {
	stages := stagesByName(t)
	for _, name := range ownStageNames(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			got, err := runStage(stages[name], filepath.Join(dir, "input.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "output.yaml")
			if *update {
				if err := os.WriteFile(out, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run make golden)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s through stage %s (-%s +got); run make golden and review:\n%s", dir, name, out, diff)
			}
		})
	}
}

// TestEveryStageHasAGolden keeps stages/ and testdata/ in step: a stage
// without an input object would go untested, a test directory without a
// stage would test nothing.
func TestEveryStageHasAGolden(t *testing.T) {
	dirs, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var tested []string
	for _, d := range dirs {
		if d.IsDir() {
			tested = append(tested, d.Name())
		}
	}
	slices.Sort(tested)
	if diff := cmp.Diff(ownStageNames(t), tested); diff != "" {
		t.Errorf("stages/*.yaml (-) and testdata/*/ (+) differ:\n%s", diff)
	}
}

// TestPodReadyStagesDifferInSelectorOnly: pod-ready and pod-ready-admitted
// are one stage for two kinds of pod, in two files because a KWOK selector
// cannot say "either"; their next states must not drift apart.
func TestPodReadyStagesDifferInSelectorOnly(t *testing.T) {
	stages := stagesByName(t)
	if diff := cmp.Diff(stages["pod-ready"].Spec.Steps, stages["pod-ready-admitted"].Spec.Steps); diff != "" {
		t.Errorf("pod-ready (-) and pod-ready-admitted (+) next states differ:\n%s", diff)
	}
}

// TestStagesNameTheConstants: the stage files spell out the label and
// annotations this package's Go code and others write.
func TestStagesNameTheConstants(t *testing.T) {
	for name, keys := range map[string][]string{
		"pod-ready":          {dynamoComponentLabel},
		"pod-ready-admitted": {dynamoComponentLabel, AdmittedAnnotation},
		"pod-complete":       {AnnotationJobOutcome},
		"job-pod-fail":       {AnnotationJobOutcome},
	} {
		for _, k := range keys {
			if !strings.Contains(ownStage(name), `["`+k+`"]`) {
				t.Errorf("stages/%s.yaml does not select on %q", name, k)
			}
		}
	}
}

// ownStageNames lists stages/*.yaml by name.
func ownStageNames(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(stageFiles, "stages/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	slices.Sort(names)
	return names
}

// stagesByName is what Stages loads, by stage name.
func stagesByName(t *testing.T) map[string]*internalversion.Stage {
	t.Helper()
	all, err := Stages(goldenReadyDelay)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*internalversion.Stage{}
	for _, list := range all {
		for _, st := range list {
			out[st.Name] = st
		}
	}
	return out
}

type object interface {
	metav1.Object
	runtime.Object
}

// goldenNow is Now's value where a delay is computed from it.
var goldenNow = time.Date(2006, 1, 2, 15, 4, 5, 0, time.UTC)

// runStage is what KWOK's stage tests record for one object and stage, as
// YAML: the object's kind and name, and, when the stage's selector takes
// it, the stage's delay, weight and next steps.
func runStage(st *internalversion.Stage, input string) ([]byte, error) {
	if st == nil {
		return nil, fmt.Errorf("no such stage")
	}
	objs, err := kwokconfig.LoadUnstructured(input)
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		return nil, fmt.Errorf("%s: want one object, have %d", input, len(objs))
	}
	obj, ok := objs[0].(object)
	if !ok {
		return nil, fmt.Errorf("%s: not an object: %T", input, objs[0])
	}
	lc, err := lifecycle.NewLifecycle([]*internalversion.Stage{st})
	if err != nil {
		return nil, err
	}
	ev := &lifecycle.Event{Labels: obj.GetLabels(), Annotations: obj.GetAnnotations(), Data: obj}
	matched, err := lc.ListAllPossible(context.Background(), ev)
	if err != nil {
		return nil, err
	}
	result := []any{}
	for _, s := range matched {
		r, err := stageResult(s, obj, ev)
		if err != nil {
			return nil, err
		}
		result = append(result, r)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	var buf bytes.Buffer
	err = kwokyaml.NewEncoder(&buf).Encode(map[string]any{
		"apiGroup": gvk.GroupVersion().String(), "kind": gvk.Kind, "name": obj.GetName(), "stages": result,
	})
	return buf.Bytes(), err
}

// stageResult is one matching stage's delay, weight and next steps.
func stageResult(s *lifecycle.Stage, obj object, ev *lifecycle.Event) (map[string]any, error) {
	ctx := context.Background()
	out := map[string]any{"stage": s.Name()}
	if delay, ok, err := s.DelayRangePossible(ctx, ev, goldenNow); err != nil {
		return nil, err
	} else if ok {
		out["delay"] = delay
	}
	if weight, ok, err := s.Weight(ctx, ev); err != nil {
		return nil, err
	} else if ok {
		out["weight"] = weight
	}
	next := []any{}
	_, err := s.DoSteps(0, obj.GetFinalizers(), obj, gotpl.NewRenderer(placeholderFuncs()),
		func(e *internalversion.StageEvent) error {
			next = append(next, map[string]any{"kind": "event", "type": e.Type, "reason": e.Reason, "message": e.Message})
			return nil
		},
		func() error {
			next = append(next, map[string]any{"kind": "delete"})
			return nil
		},
		func(p *lifecycle.Patch) error {
			next = append(next, step("patch", string(p.Type), p.Subresource, p.Data, p.Impersonation))
			return nil
		},
		func(a *lifecycle.Apply) error {
			next = append(next, step("apply", string(a.Type), a.Subresource, a.Data, a.Impersonation))
			return nil
		},
	)
	if s.ImmediateNextStage() {
		next = append(next, map[string]any{"kind": "immediate"})
	}
	out["next"] = next
	return out, err
}

func step(kind, typ, subresource string, data []byte, as *internalversion.ImpersonationConfig) map[string]any {
	out := map[string]any{"kind": kind, "type": typ, "data": json.RawMessage(data)}
	if subresource != "" {
		out["subresource"] = subresource
	}
	if as != nil {
		out["impersonation"] = as.Username
	}
	return out
}

// placeholderFuncs stand in for the template functions whose value the
// controller supplies (the time, addresses from its pools): each renders
// as its name and arguments, <PodIPsWith("node-0", false, ...)>, and a
// list as two such entries.
func placeholderFuncs() gotpl.FuncMap {
	fm := gotpl.FuncMap{}
	for _, name := range []string{"NodeIP", "NodeName", "NodePort", "PodIP", "NodeIPWith", "PodIPWith", "Now", "now", "Version"} {
		fm[name] = func(args ...any) any { return "<" + call(name, args) + ">" }
	}
	for _, name := range []string{"NodeIPsWith", "PodIPsWith"} {
		fm[name] = func(args ...any) any {
			c := call(name, args)
			return []any{"<0 of " + c + ">", "<1 of " + c + ">"}
		}
	}
	return fm
}

func call(name string, args []any) string {
	if len(args) == 0 {
		return name
	}
	as := make([]string, len(args))
	for i, a := range args {
		as[i] = fmt.Sprintf("%#v", a)
	}
	return name + "(" + strings.Join(as, ", ") + ")"
}
