package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dynamoctl/dynamo-operator/internal/await"
	"github.com/dynamoctl/dynamo-operator/operator/api/v1alpha1"
	"github.com/dynamoctl/dynamo-operator/sim/daemon"
	"github.com/dynamoctl/dynamo-operator/sim/prereq"
)

func cmdApply(args []string) error {
	fs := flag.NewFlagSet("apply", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	kubeconfig := kubeconfigFlag(fs)
	var files listFlag
	fs.Var(&files, "f", "manifest file or directory (repeatable; - reads stdin)")
	ns := fs.String("n", "default", "namespace of objects that name none")
	prereqs := fs.Bool("prerequisites", true, "first create the Secrets and ConfigMaps the manifests refer to and do not contain, with placeholder values, as their docs have users do by hand (a pod without them does not start)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("apply needs -f FILE")
	}
	c, err := kubeClient(*dir, *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, f := range files {
		objs, err := readManifests(f)
		if err != nil {
			return err
		}
		if *prereqs {
			if err := createPrerequisites(ctx, c, objs, *ns); err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
		}
		for _, o := range objs {
			if o.GetNamespace() == "" {
				if namespaced, err := c.IsObjectNamespaced(o); err == nil && namespaced {
					o.SetNamespace(*ns)
				}
			}
			if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("dynamo-sim"), client.ForceOwnership); err != nil {
				return fmt.Errorf("%s: %s %s: %w", f, o.GetKind(), o.GetName(), err)
			}
			fmt.Printf("%s/%s applied\n", strings.ToLower(o.GetKind()), o.GetName())
		}
	}
	return nil
}

// readManifests reads YAML or JSON documents from a file, every *.yaml,
// *.yml and *.json under a directory, or stdin for "-".
func readManifests(path string) ([]*unstructured.Unstructured, error) {
	var paths []string
	if path == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, err
		}
		return parseManifests("stdin", data)
	}
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		err = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".json")) {
				paths = append(paths, p)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(paths)
	} else {
		paths = []string{path}
	}
	var out []*unstructured.Unstructured
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := parseManifests(p, data)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func parseManifests(name string, data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("%s: document %d: apiVersion and kind are required", name, i)
		}
		out = append(out, u)
	}
}

func cmdWait(args []string) error {
	fs := flag.NewFlagSet("wait", flag.ContinueOnError)
	dir := stateDirFlag(fs)
	kubeconfig := kubeconfigFlag(fs)
	ns := fs.String("n", "default", "namespace")
	timeout := fs.Duration("timeout", 3*time.Minute, "give up after")
	var files listFlag
	fs.Var(&files, "f", "wait for every graph in this manifest file (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	targets := fs.Args()
	for _, f := range files {
		objs, err := readManifests(f)
		if err != nil {
			return err
		}
		for _, o := range objs {
			if o.GetKind() == "DynamoGraphDeployment" {
				targets = append(targets, "dgd/"+o.GetName())
			}
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("wait needs dgd/NAME or -f FILE with graphs")
	}
	c, err := kubeClient(*dir, *kubeconfig)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	for _, arg := range targets {
		kind, name, ok := strings.Cut(arg, "/")
		if !ok || (kind != "dgd" && kind != "dynamographdeployment") {
			return fmt.Errorf("wait: %q: only dgd/NAME is supported", arg)
		}
		// Another cluster's operator is not the simulator's to report on.
		simDir := *dir
		if *kubeconfig != "" {
			simDir = ""
		}
		if err := waitReady(ctx, c, simDir, *ns, name, start); err != nil {
			return fmt.Errorf("%w within %s", err, *timeout)
		}
	}
	return nil
}

// waitReady polls a graph, read in v1alpha1 whichever version it was
// written in, until it is Ready for its current generation, printing each
// change; when ctx ends first it names the last state read and the Ready
// condition's whole message (the progress lines shorten it). With dir, the
// simulator's state directory, it says when the simulator's operator is
// not running.
func waitReady(ctx context.Context, c client.Client, dir, ns, name string, start time.Time) error {
	last, message := "", ""
	deadline, _ := ctx.Deadline()
	err := await.Until(ctx, "dgd/"+name+" Ready", func() error {
		var d v1alpha1.DynamoGraphDeployment
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d)
		line := ""
		switch {
		case ctx.Err() != nil:
		case err != nil:
			line = err.Error()
		default:
			ready := "Unknown"
			message = ""
			if cond := meta.FindStatusCondition(d.Status.Conditions, "Ready"); cond != nil {
				ready, message = string(cond.Status), cond.Message
			}
			line = fmt.Sprintf("state=%s ready=%s %s %s", d.Status.State, ready, services(&d), truncate(message, 80))
			if ready == "True" && d.Status.ObservedGeneration == d.Generation {
				fmt.Printf("  [%5.1fs] dgd/%s: %s\n", time.Since(start).Seconds(), name, line)
				fmt.Printf("dynamo-sim: dgd/%s is Ready after %.1fs\n", name, time.Since(start).Seconds())
				return nil
			}
		}
		if dir != "" {
			if st, err := daemon.NewClient(dir).Status(ctx); err == nil && st.Operator.Pid != 0 && !st.Operator.Running {
				line += fmt.Sprintf(" (the operator is not running; see %s)", st.Operator.Log)
			}
		}
		if line != last && ctx.Err() == nil {
			fmt.Printf("  [%5.1fs] dgd/%s: %s\n", time.Since(start).Seconds(), name, line)
			last = line
		}
		return errors.New(line)
	}, await.Within(time.Until(deadline)), await.Every(250*time.Millisecond))
	if err != nil {
		return fmt.Errorf("dgd/%s not Ready (last: %s; Ready: %s)", name, last, message)
	}
	return nil
}

// createPrerequisites creates the Secrets and ConfigMaps objs refer to and
// do not contain, in each namespace they land in, unless they exist.
func createPrerequisites(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, defaultNS string) error {
	byNS := map[string][]*unstructured.Unstructured{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns == "" {
			ns = defaultNS
		}
		byNS[ns] = append(byNS[ns], o)
	}
	for ns, in := range byNS {
		if err := reportMissingClaims(ctx, c, in, ns); err != nil {
			return err
		}
		for _, o := range prereq.For(in, ns) {
			kind := o.GetObjectKind().GroupVersionKind().Kind
			err := c.Create(ctx, o)
			if apierrors.IsAlreadyExists(err) {
				added, err := addPlaceholderKeys(ctx, c, o)
				if err != nil {
					return fmt.Errorf("updating %s %s/%s: %w", kind, ns, o.GetName(), err)
				}
				if len(added) > 0 {
					fmt.Printf("%s/%s: placeholder keys %s added (the manifest names them)\n",
						strings.ToLower(kind), o.GetName(), strings.Join(added, ", "))
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("creating %s %s/%s: %w", kind, ns, o.GetName(), err)
			}
			fmt.Printf("%s/%s created with placeholder values (a prerequisite the manifest names)\n",
				strings.ToLower(kind), o.GetName())
		}
	}
	return nil
}

// addPlaceholderKeys adds to a Secret or ConfigMap that an earlier apply
// made (every value the placeholder) the keys want names and it lacks: one
// graph's pods name hf-token-secret without a key, another's name its key
// HF_TOKEN. An object a user made is left alone.
func addPlaceholderKeys(ctx context.Context, c client.Client, want client.Object) ([]string, error) {
	var (
		have  client.Object
		added []string
	)
	switch want := want.(type) {
	case *corev1.Secret:
		s := &corev1.Secret{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), s); err != nil {
			return nil, err
		}
		if s.Data == nil {
			s.Data = map[string][]byte{}
		}
		have, added = s, placeholderKeys(s.Data, want.StringData, func(v []byte) string { return string(v) }, []byte(prereq.Placeholder))
	case *corev1.ConfigMap:
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(want), cm); err != nil {
			return nil, err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		have, added = cm, placeholderKeys(cm.Data, want.Data, func(v string) string { return v }, prereq.Placeholder)
	}
	if len(added) == 0 {
		return nil, nil
	}
	return added, c.Update(ctx, have)
}

// placeholderKeys adds to have, when all its values are the placeholder,
// the keys of want it lacks, and returns them sorted.
func placeholderKeys[V any](have map[string]V, want map[string]string, text func(V) string, placeholder V) []string {
	for _, v := range have {
		if text(v) != prereq.Placeholder {
			return nil
		}
	}
	var added []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if _, ok := have[k]; !ok {
			have[k] = placeholder
			added = append(added, k)
		}
	}
	return added
}

// reportMissingClaims says which claims objs mount that neither they nor
// the namespace hold: the simulator creates none (prereq.Claims), so the
// pods mounting them stay Pending, as the graph's status will say.
func reportMissingClaims(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, ns string) error {
	for _, name := range prereq.Claims(objs) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.PersistentVolumeClaim{})
		if err == nil {
			continue
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading persistentvolumeclaim %s/%s: %w", ns, name, err)
		}
		fmt.Printf("persistentvolumeclaim/%s not found: the manifest mounts it; its pods stay Pending until you create it (with the data its docs say)\n", name)
	}
	return nil
}
