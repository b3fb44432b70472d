// Package gitops holds what GitOps tools need to read the health of the
// operator's objects. Flux (and anything else built on kstatus) needs
// nothing: the operator writes status.observedGeneration and Ready and
// Stalled conditions as kstatus reads them. Argo CD does not use kstatus
// and assesses a custom resource only through a Lua health script; the
// scripts are argocd/health-<kind>.lua, one per kind the chart installs
// that has a status, and argocd/argocd-cm.yaml is the ConfigMap patch that
// carries them, generated from the scripts by ArgoCDConfigMap (`make
// argocd-health`; the package's tests fail when the two differ).
//
// The tests evaluate each script as Argo CD does (gopher-lua, without the
// string library) and kstatus on objects captured from the simulator
// (testdata/capture.sh), so what users see in either tool is asserted on
// statuses the operator really wrote. See docs/gitops-health.md.
package gitops

import (
	"bytes"
	"embed"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Group is the API group of every kind here.
const Group = "nvidia.com"

// Scripts names each kind's health script in the embedded argocd/
// directory. DynamoWorkerMetadata, the fifth kind the chart installs, has
// no status: the runtime writes it, not a GitOps tool, and Argo CD leaves
// a kind without a health check out of an application's health.
var Scripts = map[string]string{
	"DynamoGraphDeployment":     "argocd/health-dynamographdeployment.lua",
	"DynamoComponentDeployment": "argocd/health-dynamocomponentdeployment.lua",
	"DynamoModel":               "argocd/health-dynamomodel.lua",
	"DynamoComponent":           "argocd/health-dynamocomponent.lua",
}

// files holds the scripts as shipped.
//
//go:embed argocd/health-*.lua
var files embed.FS

// Script returns the health script of a kind.
func Script(kind string) (string, error) {
	path, ok := Scripts[kind]
	if !ok {
		return "", fmt.Errorf("no health script for kind %s", kind)
	}
	b, err := files.ReadFile(path)
	return string(b), err
}

// ConfigMapKey is the argocd-cm key of a kind's health script, as Argo CD
// looks it up: resource.customizations.health.<group>_<kind>.
func ConfigMapKey(kind string) string {
	return "resource.customizations.health." + Group + "_" + kind
}

// ArgoCDConfigMap renders argocd/argocd-cm.yaml: a patch of Argo CD's
// argocd-cm ConfigMap with each kind's script under its key, for
// `kubectl patch --patch-file` or a kustomization's patches.
func ArgoCDConfigMap() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`# Argo CD health checks of the nvidia.com kinds of dynamo-operator: a patch of
# Argo CD's argocd-cm ConfigMap. Generated from chart/gitops/argocd/health-*.lua
# by 'make argocd-health'; edit the scripts, not this file.
#
#   kubectl -n argocd patch configmap argocd-cm --patch-file argocd-cm.yaml
#
# or list it under a kustomization's patches. See docs/gitops-health.md.
apiVersion: v1
kind: ConfigMap
metadata:
  name: argocd-cm
  labels:
    app.kubernetes.io/name: argocd-cm
    app.kubernetes.io/part-of: argocd
data:
`)
	for _, kind := range slices.Sorted(maps.Keys(Scripts)) {
		script, err := Script(kind)
		if err != nil {
			return nil, err
		}
		if !strings.HasSuffix(script, "\n") || strings.Contains(script, "\t") {
			return nil, fmt.Errorf("%s: a script must end with a newline and hold no tab, to stay a YAML literal block", Scripts[kind])
		}
		fmt.Fprintf(&b, "  %s: |\n", ConfigMapKey(kind))
		for _, line := range strings.SplitAfter(strings.TrimSuffix(script, "\n"), "\n") {
			if strings.TrimSpace(line) == "" {
				b.WriteString("\n")
				continue
			}
			b.WriteString("    " + line)
		}
		b.WriteString("\n")
	}
	return b.Bytes(), nil
}
