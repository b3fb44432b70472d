{{/*
The rules for the objects the operator reconciles, in a ClusterRole when
cluster-wide and a Role in the managed namespace when namespace-scoped.
chart/README.md says why each rule is needed; chart tests run the operator
with exactly these rights and fail on any forbidden request.
*/}}
{{- define "dynamo-operator.workloadRules" -}}
# Graphs and their components: watched, written (components are created and
# deleted by the graph controller), status written.
- apiGroups: ["nvidia.com"]
  resources: ["dynamographdeployments", "dynamocomponentdeployments"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["nvidia.com"]
  resources: ["dynamographdeployments/status", "dynamocomponentdeployments/status"]
  verbs: ["get", "update", "patch"]
# Owner references with blockOwnerDeletion on children need this where the
# OwnerReferencesPermissionEnforcement admission plugin is on (OpenShift).
- apiGroups: ["nvidia.com"]
  resources: ["dynamographdeployments/finalizers", "dynamocomponentdeployments/finalizers"]
  verbs: ["update"]
# Scaling adapters, one per service that opts in: created with the graph's
# replicas, their status (replicas, selector) written for the scale
# subresource, deleted when the service opts out.
- apiGroups: ["nvidia.com"]
  resources: ["dynamographdeploymentscalingadapters"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["nvidia.com"]
  resources: ["dynamographdeploymentscalingadapters/status"]
  verbs: ["get", "update", "patch"]
# Models: watched, their unload finalizer added and removed (patch), status
# written; the LoRA calls go to the pods (read below), not to the API.
- apiGroups: ["nvidia.com"]
  resources: ["dynamomodels"]
  verbs: ["get", "list", "watch", "update", "patch"]
- apiGroups: ["nvidia.com"]
  resources: ["dynamomodels/status"]
  verbs: ["get", "update", "patch"]
# Children: server-side applied and watched; garbage collected through owner
# references, so no delete for claims (claims are retained). Deployments are
# deleted only where an earlier version rendered one for a multinode
# service, which is now a LeaderWorkerSet.
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Multinode services' groups (sigs.k8s.io/lws); watched once the API exists.
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
# Gang PodGroups, one per multinode group (Kubernetes 1.36 alpha; watched once
# the API exists); deleted past the replicas or when nodeCount changes
# (minCount is immutable).
- apiGroups: ["scheduling.k8s.io"]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# The SSH key pair of a multinode TRT-LLM component, <component>-mpi-ssh:
# read by name and created once (neither can be limited to names not yet known).
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "create"]
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
# Services and Ingresses are deleted when a graph stops asking for them.
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["networking.k8s.io"]
  resources: ["ingresses"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# The shared GPUs of a service with the GPU memory service: a
# ResourceClaimTemplate <component>-gpu, deleted when the service stops
# asking for it or recreated for a new spec (a template is immutable).
- apiGroups: ["resource.k8s.io"]
  resources: ["resourceclaimtemplates"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# A component's Istio VirtualService (ingress.useVirtualService), instead of
# its Ingress; watched once the API exists, deleted when no longer asked for.
- apiGroups: ["networking.istio.io"]
  resources: ["virtualservices"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# The InferencePool <graph>-pool of a graph's endpoint picker (the Gateway API
# inference extension); watched once the API exists, deleted when the graph
# no longer has a picker.
- apiGroups: ["inference.networking.k8s.io"]
  resources: ["inferencepools"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# The inline configuration of a graph's endpoint picker, <graph>-epp-config,
# deleted when the configuration moves to a ConfigMap of the user's.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Each graph's Kubernetes-discovery identity for its pods: a ServiceAccount
# <graph>-k8s-service-discovery with a Role and RoleBinding, server-side
# applied and deleted with the graph (operator/render/rbac.go).
- apiGroups: [""]
  resources: ["serviceaccounts"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles", "rolebindings"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# Kubernetes lets nobody grant what they do not hold: the discovery Role's
# own rules (pods read their peers' endpoints and publish worker metadata).
# The operator itself reads pods to explain a stuck rollout.
# Narrower than the escalate and bind verbs, which would allow any grant.
- apiGroups: [""]
  resources: ["pods", "endpoints"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["discovery.k8s.io"]
  resources: ["endpointslices"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["nvidia.com"]
  resources: ["dynamoworkermetadatas"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# DynamoComponents: a graph with dynamoComponent creates its own and shares
# it (owner references); their image builds run as Jobs, created, and
# deleted when made for an earlier spec. The build Job's pods are the Job
# controller's to make.
- apiGroups: ["nvidia.com"]
  resources: ["dynamocomponents"]
  verbs: ["get", "list", "watch", "create", "update", "patch"]
- apiGroups: ["nvidia.com"]
  resources: ["dynamocomponents/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["nvidia.com"]
  resources: ["dynamocomponents/finalizers"]
  verbs: ["update"]
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get", "list", "watch", "create", "delete"]
# Events on graphs and components.
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "update", "patch"]
{{- if .Values.namespaceRestriction.enabled }}
# The dynamo-operator-namespace-scope marker Lease in the managed namespace:
# created, renewed, deleted on clean shutdown (create cannot be limited by
# name).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
# This Role itself, read for its UID: the marker Lease is created owned by
# it, so the garbage collector removes the Lease with the release.
- apiGroups: ["rbac.authorization.k8s.io"]
  resources: ["roles"]
  resourceNames: [{{ include "dynamo-operator.fullname" . | quote }}]
  verbs: ["get"]
{{- else }}
# Marker Leases of namespace-scoped operators in every namespace, read to
# leave their namespaces alone (watched by field selector on the name).
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch"]
{{- end }}
{{- end -}}
