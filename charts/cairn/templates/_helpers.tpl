{{/*
Names. Services are always called cairn-<service>: peers find each other at cairn-<peer>:<grpc port>,
so one release of this chart per namespace.
*/}}

{{- define "cairn.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of one service's Deployment and Service. Call with the service key, e.g. "gateway". */}}
{{- define "cairn.serviceName" -}}
{{- printf "cairn-%s" . -}}
{{- end -}}

{{/* The Secret holding DATABASE_URL, REDIS_URL, NATS_URL and CAIRN_DATA_KEY. */}}
{{- define "cairn.secretName" -}}
{{- default "cairn-secrets" .Values.existingSecret -}}
{{- end -}}

{{- define "cairn.configMapName" -}}
cairn-env
{{- end -}}

{{/* Labels on every object besides its selector labels. Call with the root context. */}}
{{- define "cairn.commonLabels" -}}
helm.sh/chart: {{ include "cairn.chart" . }}
app.kubernetes.io/part-of: cairn
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Labels of fleet-wide objects (ConfigMap, Secret). Call with the root context. */}}
{{- define "cairn.labels" -}}
app.kubernetes.io/name: cairn
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "cairn.commonLabels" . }}
{{- end -}}

{{/* Selector labels of one service. Call with (dict "root" $ "name" "<service>"). */}}
{{- define "cairn.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cairn.serviceName" .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{/* Environment variable naming a peer's gRPC address, e.g. AUDIT_GRPC_ADDR (packages/config grpcAddrVar). */}}
{{- define "cairn.grpcAddrVar" -}}
{{- printf "%s_GRPC_ADDR" (upper .) -}}
{{- end -}}

{{/*
A secret value: the one given in values, else the one already in the Secret (lookup), else generated. Call with
(dict "root" $ "secret" "<Secret name>" "key" "<key>" "value" <given> "generate" "<hex64|password>").
*/}}
{{- define "cairn.keptSecretValue" -}}
{{- $value := .value | default "" | toString -}}
{{- if not $value -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .secret -}}
{{- if and $existing $existing.data (hasKey $existing.data .key) -}}
{{- $value = index $existing.data .key | b64dec -}}
{{- else if eq .generate "hex64" -}}
{{- $value = randAlphaNum 64 | sha256sum -}}
{{- else -}}
{{- /* A letter first: nats-server re-reads a $VARIABLE's value as a config token, so a password such as "2e7a…" would
       parse as a number and the server would refuse its configuration. */ -}}
{{- $value = printf "p%s" (randAlphaNum 31) -}}
{{- end -}}
{{- end -}}
{{- $value -}}
{{- end -}}

{{/* The Secret of the services' NATS passwords, which the NATS server reads too. */}}
{{- define "cairn.natsSecretName" -}}
cairn-nats-auth
{{- end -}}
