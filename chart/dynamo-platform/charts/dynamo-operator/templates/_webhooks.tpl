{{/* Pieces of the webhook configurations (webhooks.yaml). */}}
{{- define "dynamo-operator.webhookCommon" -}}
sideEffects: None
admissionReviewVersions: ["v1"]
failurePolicy: {{ .Values.webhook.failurePolicy }}
timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
{{- if .Values.namespaceRestriction.enabled }}
namespaceSelector:
  matchLabels:
    kubernetes.io/metadata.name: {{ include "dynamo-operator.targetNamespace" . }}
{{- end }}
{{- end -}}
{{- define "dynamo-operator.webhookClient" -}}
clientConfig:
  service:
    namespace: {{ .root.Release.Namespace }}
    name: {{ include "dynamo-operator.webhookServiceName" .root }}
    path: {{ .path }}
    port: 443
  {{- if .root.Values.webhook.certificateSecret.external }}
  caBundle: {{ .root.Values.webhook.caBundle }}
  {{- end }}
{{- end -}}
{{- define "dynamo-operator.webhookRules" -}}
rules:
  - operations: ["CREATE", "UPDATE"]
    apiGroups: ["nvidia.com"]
    apiVersions: ["v1alpha1"]
    resources: [{{ . }}]
    scope: Namespaced
{{- end -}}
