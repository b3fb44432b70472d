#!/usr/bin/env bash
# Captures the objects in this directory from the simulator, as the tests of
# the health checks read them: real statuses the operator wrote, each in the
# state its file name says. Run it from the repository's root on a fresh
# `make sim` (the vllm disagg graph Ready in namespace default); it takes
# about five minutes and leaves the simulator running (`make sim-down`).
#
#   chart/gitops/testdata/capture.sh
#
# Each object is stored as `kubectl get -o yaml` prints it, without the
# fields that only identify one cluster's copy (managedFields, uid,
# resourceVersion, timestamps of creation, last-applied annotations, the
# operator's version annotations).
set -euo pipefail

out=chart/gitops/testdata
compat=../shared/compat/examples/backends/vllm/deploy
export KUBECONFIG=${KUBECONFIG:-$(bin/dynamo-sim kubeconfig)}
sim=bin/dynamo-sim

# plural SHORTNAME: the resource's plural, which kubectl needs beside a
# version (dgd.v1alpha1.nvidia.com resolves to the preferred version).
plural() {
  case $1 in
    dgd) echo dynamographdeployments ;;
    dcd) echo dynamocomponentdeployments ;;
    dm) echo dynamomodels ;;
    dc) echo dynamocomponents ;;
  esac
}

# cap FILE RESOURCE [API_VERSION]: store the object, in the API version
# given (default: the one kubectl prefers, v1beta1 where a kind serves it).
cap() {
  local file=$1 res=$2 version=${3:-}
  if [ -n "$version" ]; then
    res=$(plural "${res%%/*}").$version.nvidia.com/${res#*/}
  fi
  kubectl get "$res" -o json | yq -y '
    del(.metadata.managedFields, .metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp,
        .metadata.annotations."kubectl.kubernetes.io/last-applied-configuration",
        .metadata.annotations."nvidia.com/dynamo-operator-origin-version",
        .metadata.annotations."nvidia.com/dynamo-operator-renderer")
    | if .metadata.ownerReferences then .metadata.ownerReferences |= map(del(.uid)) else . end
    | if .metadata.annotations == {} then del(.metadata.annotations) else . end' >"$out/$file.yaml"
  echo "captured $file"
}

waitfor() { kubectl wait --timeout="${2:-180s}" "--for=$1" "${@:3}"; }

# Healthy: the graph make sim applied, in both versions, and a component.
waitfor jsonpath='{.status.state}'=successful 180s dgd/vllm-disagg
cap dgd-healthy-v1beta1 dgd/vllm-disagg v1beta1
cap dgd-healthy-v1alpha1 dgd/vllm-disagg v1alpha1
cap dcd-healthy-v1beta1 dcd/vllm-disagg-frontend v1beta1
cap dcd-healthy-v1alpha1 dcd/vllm-disagg-frontend v1alpha1

# Progressing: a graph just created, before the operator's first report,
# then while its components start.
kubectl apply --server-side -f $compat/agg.yaml
cap dgd-created-v1beta1 dgd/vllm-agg v1beta1
waitfor create 60s dcd/vllm-agg-vllmdecodeworker
cap dcd-created-v1beta1 dcd/vllm-agg-vllmdecodeworker v1beta1
waitfor jsonpath='{.status.state}'=pending 60s dgd/vllm-agg
cap dgd-pending-v1alpha1 dgd/vllm-agg v1alpha1
waitfor jsonpath='{.status.state}'=successful 180s dgd/vllm-agg

# Progressing: a spec the operator has not observed yet. While it is down
# (its admission webhooks set to Ignore for the moment, as they fail
# closed), the graph and a component change, in v1alpha1, the version
# served without the operator's conversion webhook; their statuses still
# say Ready for the previous generation.
webhooks() {
  kubectl patch validatingwebhookconfiguration dynamo-operator-validating --type json -p "[
    {\"op\":\"replace\",\"path\":\"/webhooks/0/failurePolicy\",\"value\":\"$1\"},
    {\"op\":\"replace\",\"path\":\"/webhooks/1/failurePolicy\",\"value\":\"$1\"},
    {\"op\":\"replace\",\"path\":\"/webhooks/2/failurePolicy\",\"value\":\"$1\"},
    {\"op\":\"replace\",\"path\":\"/webhooks/3/failurePolicy\",\"value\":\"$1\"}]"
  kubectl patch mutatingwebhookconfiguration dynamo-operator-mutating --type json -p "[
    {\"op\":\"replace\",\"path\":\"/webhooks/0/failurePolicy\",\"value\":\"$1\"}]"
}
webhooks Ignore
kubectl -n dynamo-system scale deployment dynamo-platform-dynamo-operator --replicas 0
waitfor delete 120s -n dynamo-system pod -l app.kubernetes.io/name=dynamo-operator
kubectl patch dynamographdeployments.v1alpha1.nvidia.com vllm-agg --type merge -p '{"spec":{"services":{"Frontend":{"envs":[{"name":"LOG","value":"1"}]}}}}'
kubectl scale dynamocomponentdeployments.v1alpha1.nvidia.com vllm-disagg-vllmprefillworker --replicas 2
cap dgd-unobserved-v1alpha1 dgd/vllm-agg v1alpha1
cap dcd-unobserved-v1alpha1 dcd/vllm-disagg-vllmprefillworker v1alpha1
kubectl -n dynamo-system scale deployment dynamo-platform-dynamo-operator --replicas 1
waitfor condition=Available 180s -n dynamo-system deployment/dynamo-platform-dynamo-operator
webhooks Fail
# v1alpha1 again: the conversion webhook may take a moment to answer.
waitfor jsonpath='{.status.observedGeneration}'=2 180s dynamographdeployments.v1alpha1.nvidia.com/vllm-agg
waitfor jsonpath='{.status.state}'=successful 180s dynamographdeployments.v1alpha1.nvidia.com/vllm-agg
kubectl scale dcd vllm-disagg-vllmprefillworker --replicas 1

# Degraded component, graph still progressing: a pod that cannot start (its
# Secret is missing), then the same past the Deployment's progress deadline:
# the component and the graph are stalled.
kubectl patch dynamographdeployments.v1alpha1.nvidia.com vllm-disagg --type merge -p '{"spec":{"services":{"Frontend":{"envFromSecret":"hf-token"}}}}'
waitfor jsonpath='{.status.conditions[?(@.type=="Available")].reason}'=CreateContainerConfigError 180s dcd/vllm-disagg-frontend
waitfor jsonpath='{.status.state}'=pending 60s dgd/vllm-disagg
cap dcd-secret-missing-v1beta1 dcd/vllm-disagg-frontend v1beta1
cap dgd-component-failing-v1alpha1 dgd/vllm-disagg v1alpha1
kubectl patch deployment vllm-disagg-frontend --type merge -p '{"spec":{"progressDeadlineSeconds":5}}'
waitfor jsonpath='{.status.conditions[?(@.type=="Stalled")].status}'=True 180s dcd/vllm-disagg-frontend
waitfor jsonpath='{.status.conditions[?(@.type=="Stalled")].status}'=True 60s dgd/vllm-disagg
cap dcd-stalled-v1alpha1 dcd/vllm-disagg-frontend v1alpha1
cap dgd-stalled-v1beta1 dgd/vllm-disagg v1beta1

# Degraded component: a crash loop.
pod=$(kubectl get pods -l nvidia.com/dynamo-component=vllm-agg-vllmdecodeworker -o jsonpath='{.items[0].metadata.name}')
$sim fault crash-loop --pod "default/$pod"
waitfor jsonpath='{.status.conditions[?(@.type=="Available")].reason}'=CrashLoopBackOff 180s dcd/vllm-agg-vllmdecodeworker
cap dcd-crashloop-v1beta1 dcd/vllm-agg-vllmdecodeworker v1beta1

# Progressing component: more replicas than the cluster has GPUs for; the
# scheduler cannot place them yet (a node may join).
kubectl scale dcd vllm-disagg-vllmprefillworker --replicas 48
waitfor jsonpath='{.status.conditions[?(@.type=="Available")].reason}'=Unschedulable 180s dcd/vllm-disagg-vllmprefillworker
cap dcd-unschedulable-v1beta1 dcd/vllm-disagg-vllmprefillworker v1beta1
kubectl scale dcd vllm-disagg-vllmprefillworker --replicas 1

# DynamoComponent: an image given (healthy), a build under way, a build past
# its deadline (stalled); the graph waiting for that build fails.
kubectl apply --server-side -f - <<'EOF'
apiVersion: nvidia.com/v1alpha1
kind: DynamoComponent
metadata:
  name: frontend--v1
spec:
  dynamoComponent: frontend:v1
  image: registry.example/dynamo/frontend:v1
---
apiVersion: nvidia.com/v1alpha1
kind: DynamoComponent
metadata:
  name: slow--v1
spec:
  dynamoComponent: slow:v1
  imageBuildTimeout: 30s
  imageBuilderExtraPodMetadata:
    annotations:
      dynamo-sim/job-outcome: hang
---
apiVersion: nvidia.com/v1alpha1
kind: DynamoGraphDeployment
metadata:
  name: slow-build
spec:
  dynamoComponent: slow:v1
  services:
    Frontend:
      componentType: frontend
      replicas: 1
EOF
waitfor jsonpath='{.status.conditions[?(@.type=="ImageReady")].reason}'=ImageGiven 60s dc/frontend--v1
cap dc-image-given dc/frontend--v1
waitfor jsonpath='{.status.conditions[?(@.type=="ImageReady")].reason}'=ImageBuilding 60s dc/slow--v1
cap dc-building dc/slow--v1
waitfor jsonpath='{.status.conditions[?(@.type=="ImageReady")].reason}'=ImageBuildTimedOut 120s dc/slow--v1
cap dc-timed-out dc/slow--v1
waitfor jsonpath='{.status.state}'=failed 60s dgd/slow-build
cap dgd-failed-v1beta1 dgd/slow-build v1beta1

# DynamoModel: an adapter loaded on every worker (healthy), one whose base
# model no pod serves (progressing), one a worker refuses (degraded).
# lora NAME BASE applies the adapter team/NAME of the base model BASE.
lora() {
  kubectl apply --server-side -f - <<EOF
apiVersion: nvidia.com/v1alpha1
kind: DynamoModel
metadata:
  name: $1
spec:
  modelName: team/$1
  baseModelName: $2
  modelType: lora
  source:
    uri: s3://my-loras/team/$1
EOF
}
kubectl create secret generic minio-secret --from-literal=AWS_ACCESS_KEY_ID=minio --from-literal=AWS_SECRET_ACCESS_KEY=minio123 \
  --dry-run=client -o yaml | kubectl apply --server-side -f -
kubectl apply --server-side -f $compat/lora/agg_lora.yaml
waitfor jsonpath='{.status.state}'=successful 240s dgd/vllm-agg-lora
kubectl apply --server-side -f $compat/lora/lora-model.yaml
waitfor jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'=Loaded 120s dm/codelion-recovery-lora
cap dm-loaded dm/codelion-recovery-lora
lora orphan-lora Qwen/Qwen3-32B
waitfor jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'=NoEndpoints 60s dm/orphan-lora
cap dm-no-endpoints dm/orphan-lora
worker=$(kubectl get pods -l nvidia.com/dynamo-component=vllm-agg-lora-vllmdecodeworker -o jsonpath='{.items[0].metadata.name}')
kubectl annotate pod "$worker" sim.dynamo.dev/lora-load-fails=true
lora refused-lora Qwen/Qwen3-0.6B
waitfor jsonpath='{.status.conditions[?(@.type=="Ready")].reason}'=LoadFailed 120s dm/refused-lora
cap dm-load-failed dm/refused-lora
