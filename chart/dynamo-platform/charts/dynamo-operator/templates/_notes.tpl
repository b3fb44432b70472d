{{/*
What helm prints after an install or upgrade. The parent chart renders it
(its NOTES.txt): helm shows only the installed chart's notes.
*/}}
{{- define "dynamo-operator.notes" -}}
The Dynamo operator {{ include "dynamo-operator.version" . }} is installed in namespace {{ .Release.Namespace }}
{{- if .Values.namespaceRestriction.enabled }}, managing only namespace {{ include "dynamo-operator.targetNamespace" . }}.
Its marker Lease: kubectl get lease -n {{ include "dynamo-operator.targetNamespace" . }} dynamo-operator-namespace-scope -o jsonpath='{.spec.holderIdentity}'
{{- else }}, managing every namespace (cluster-wide).
{{- end }}
Wait for it: kubectl rollout status -n {{ .Release.Namespace }} deployment/{{ include "dynamo-operator.fullname" . }}
{{- if and .Values.webhook.enabled (le (int .Values.controllerManager.replicas) 1) }}
One replica: while its pod restarts the API server refuses writes to the nvidia.com kinds (no admission
webhook answers). For high availability: --set dynamo-operator.controllerManager.replicas=2
{{- end }}
{{- if .Values.metricsService.enabled }}
Metrics: bind ClusterRole {{ include "dynamo-operator.fullname" . }}-{{ .Release.Namespace }}-metrics-reader to your scraper's ServiceAccount.
{{- end }}
{{- end -}}
