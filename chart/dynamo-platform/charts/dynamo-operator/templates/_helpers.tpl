{{/* Resource name prefix: <release>-dynamo-operator, or the release name when it already says dynamo-operator. */}}
{{- define "dynamo-operator.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "dynamo-operator.labels" -}}
app.kubernetes.io/name: dynamo-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ include "dynamo-operator.version" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- with omit (.Values.commonLabels | default dict) "app.kubernetes.io/name" "app.kubernetes.io/instance" "app.kubernetes.io/version" "app.kubernetes.io/managed-by" "helm.sh/chart" }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "dynamo-operator.selectorLabels" -}}
app.kubernetes.io/name: dynamo-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The image tag, which is also the operator version in Lease holder identities. */}}
{{- define "dynamo-operator.version" -}}
{{- default .Chart.AppVersion .Values.controllerManager.manager.image.tag -}}
{{- end -}}

{{/*
The image reference: repository@digest when a digest is given (the tag,
or appVersion, still names the operator version), else repository:tag.
*/}}
{{- define "dynamo-operator.image" -}}
{{- $img := .Values.controllerManager.manager.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (include "dynamo-operator.version" .) -}}
{{- end -}}
{{- end -}}

{{- define "dynamo-operator.namespaceScoped" -}}
{{- if .Values.namespaceRestriction.enabled }}true{{ end -}}
{{- end -}}

{{/* The namespace a namespace-scoped operator manages. */}}
{{- define "dynamo-operator.targetNamespace" -}}
{{- default .Release.Namespace .Values.namespaceRestriction.targetNamespace -}}
{{- end -}}

{{/* The operator's ServiceAccount: the chart's (full name unless named), or an existing one by name. */}}
{{- define "dynamo-operator.serviceAccountName" -}}
{{- default (include "dynamo-operator.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "dynamo-operator.leaderElectionID" -}}
{{- if .Values.controllerManager.leaderElection.id -}}
{{- .Values.controllerManager.leaderElection.id -}}
{{- else if .Values.namespaceRestriction.enabled -}}
{{- printf "dynamo-operator-leader-%s" (include "dynamo-operator.targetNamespace" .) -}}
{{- else -}}
dynamo-operator-leader
{{- end -}}
{{- end -}}

{{- define "dynamo-operator.leaderElectionNamespace" -}}
{{- default .Release.Namespace .Values.controllerManager.leaderElection.namespace -}}
{{- end -}}

{{- define "dynamo-operator.webhookServiceName" -}}
{{- printf "%s-webhook" (include "dynamo-operator.fullname" .) -}}
{{- end -}}

{{- define "dynamo-operator.certSecretName" -}}
{{- default (printf "%s-webhook-cert" (include "dynamo-operator.fullname" .)) .Values.webhook.certificateSecret.name -}}
{{- end -}}

{{/* auto, cert-manager or external: who provisions the webhook serving certificate. */}}
{{- define "dynamo-operator.certMode" -}}
{{- if .Values.webhook.certManager.enabled -}}cert-manager
{{- else if .Values.webhook.certificateSecret.external -}}external
{{- else -}}auto
{{- end -}}
{{- end -}}

{{/* Webhook configuration names, as the operator names them (operator/webhooks). */}}
{{- define "dynamo-operator.validatingName" -}}
{{- if .Values.namespaceRestriction.enabled -}}
{{- printf "dynamo-operator-validating-%s" (include "dynamo-operator.targetNamespace" .) -}}
{{- else -}}dynamo-operator-validating{{- end -}}
{{- end -}}
{{- define "dynamo-operator.mutatingName" -}}
{{- if .Values.namespaceRestriction.enabled -}}
{{- printf "dynamo-operator-mutating-%s" (include "dynamo-operator.targetNamespace" .) -}}
{{- else -}}dynamo-operator-mutating{{- end -}}
{{- end -}}

{{/* Whether the init container applies the CRDs: auto means when cluster-wide. */}}
{{- define "dynamo-operator.installCRDs" -}}
{{- $v := .Values.crds.install -}}
{{- if eq (toString $v) "auto" -}}
{{- if not .Values.namespaceRestriction.enabled }}true{{ end -}}
{{- else if $v }}true{{ end -}}
{{- end -}}

{{/*
Whether the operator migrates the storage of the CRDs (--migrate-storage):
the release that installs them, cluster-wide only. Rewriting every stored
object takes listing and updating each kind cluster-wide, and trimming
storedVersions patching the CRDs' status, which a namespace-scoped operator
can do neither of (operator/storagemigration).
*/}}
{{- define "dynamo-operator.migrateStorage" -}}
{{- if and (include "dynamo-operator.installCRDs" .) (not .Values.namespaceRestriction.enabled) }}true{{ end -}}
{{- end -}}

{{/* The CRDs the operator embeds (crds/), for resourceNames. */}}
{{- define "dynamo-operator.crdNames" -}}
- dynamocomponentdeployments.nvidia.com
- dynamocomponents.nvidia.com
- dynamographdeployments.nvidia.com
- dynamographdeploymentscalingadapters.nvidia.com
- dynamomodels.nvidia.com
- dynamoworkermetadatas.nvidia.com
{{- end -}}

{{/* The CRDs that convert by webhook (crdinstall.ConvertedNames), for resourceNames. */}}
{{- define "dynamo-operator.convertedCRDNames" -}}
- dynamocomponentdeployments.nvidia.com
- dynamographdeployments.nvidia.com
{{- end -}}

{{/*
Whether the operator keeps its CA in the CRDs' conversion webhook: the
release that installs the CRDs names its own webhook there, and in the auto
mode its operator is the one to inject the CA.
*/}}
{{- define "dynamo-operator.injectCRDs" -}}
{{- if and (include "dynamo-operator.installCRDs" .) .Values.webhook.enabled (eq (include "dynamo-operator.certMode" .) "auto") }}true{{ end -}}
{{- end -}}

{{/*
Whether the chart renders a PodDisruptionBudget: auto means when more than
one replica runs (with one, minAvailable 1 would block every node drain).
*/}}
{{- define "dynamo-operator.pdbEnabled" -}}
{{- $v := .Values.controllerManager.podDisruptionBudget.enabled -}}
{{- if eq (toString $v) "auto" -}}
{{- if gt (int .Values.controllerManager.replicas) 1 }}true{{ end -}}
{{- else if $v }}true{{ end -}}
{{- end -}}

{{/*
The pod's affinity: the affinity value, plus, unless it names a
podAntiAffinity of its own, the preferred anti-affinity by hostname
(podAntiAffinity: preferred), so replicas land on different nodes where
they can and a node's loss takes one replica, not all.
*/}}
{{- define "dynamo-operator.affinity" -}}
{{- $m := .Values.controllerManager -}}
{{- $affinity := deepCopy ($m.affinity | default dict) -}}
{{- if and (eq $m.podAntiAffinity "preferred") (not (hasKey $affinity "podAntiAffinity")) -}}
{{- $term := dict "topologyKey" "kubernetes.io/hostname" "labelSelector" (dict "matchLabels" (include "dynamo-operator.selectorLabels" . | fromYaml)) -}}
{{- $_ := set $affinity "podAntiAffinity" (dict "preferredDuringSchedulingIgnoredDuringExecution" (list (dict "weight" 100 "podAffinityTerm" $term))) -}}
{{- end -}}
{{- with $affinity }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/*
The topology spread constraints, each selecting this release's operator
pods unless it has a labelSelector of its own.
*/}}
{{- define "dynamo-operator.topologySpreadConstraints" -}}
{{- $out := list -}}
{{- range .Values.controllerManager.topologySpreadConstraints -}}
{{- $c := deepCopy . -}}
{{- if not (hasKey $c "labelSelector") -}}
{{- $_ := set $c "labelSelector" (dict "matchLabels" (include "dynamo-operator.selectorLabels" $ | fromYaml)) -}}
{{- end -}}
{{- $out = append $out $c -}}
{{- end -}}
{{- with $out }}{{ toYaml . }}{{ end -}}
{{- end -}}

{{/*
The image builder's settings (DynamoComponent builds) as the environment
variables Dynamo's operator documents; unset values are left out, so the
operator's defaults apply, and so are variables the env value sets (those
win: a Deployment's env cannot name one variable twice).
*/}}
{{- define "dynamo-operator.imageBuilderEnv" -}}
{{- $ib := .Values.imageBuilder | default dict -}}
{{- $reg := .Values.dockerRegistry | default dict -}}
{{- $userEnv := list -}}
{{- range .Values.env }}{{- $userEnv = append $userEnv .name -}}{{- end -}}
{{- range $name, $value := dict
    "DYNAMO_IMAGE_BUILD_ENGINE" $ib.engine
    "DYNAMO_IMAGE_BUILDER_NAMESPACE" $ib.namespace
    "BUILDKIT_URL" $ib.buildkitURL
    "INTERNAL_IMAGES_BUILDKIT" $ib.buildkitImage
    "API_STORE_ENDPOINT" $ib.apiStoreEndpoint
    "DOCKER_REGISTRY_SERVER" $reg.server
    "DOCKER_REGISTRY_DYNAMO_COMPONENTS_REPOSITORY_NAME" $reg.repositoryName }}
{{- if and $value (not (has $name $userEnv)) }}
- name: {{ $name }}
  value: {{ $value | quote }}
{{- end }}
{{- end }}
{{- if and (hasKey $reg "secure") (not (has "DOCKER_REGISTRY_SECURE" $userEnv)) }}
- name: DOCKER_REGISTRY_SECURE
  value: {{ $reg.secure | quote }}
{{- end }}
{{- if and $ib.estargz (not (has "ESTARGZ_ENABLED" $userEnv)) }}
- name: ESTARGZ_ENABLED
  value: "true"
{{- end }}
{{- if and $reg.addNamespacePrefix (not (has "ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME" $userEnv)) }}
- name: ADD_NAMESPACE_PREFIX_TO_IMAGE_NAME
  value: "true"
{{- end }}
{{- end -}}
