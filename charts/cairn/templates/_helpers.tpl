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

{{/* The Secret holding the connection URLs and the keys (the chart's, or existingSecret). */}}
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

{{/* "true" in production mode, "" in development. Call with the root context. */}}
{{- define "cairn.production" -}}
{{- if eq (toString .Values.mode) "production" }}true{{ end -}}
{{- end -}}

{{/*
A key or password. In order: the value given; the value already in the release's Secret (lookup: only helm
install/upgrade against a cluster sees it; `helm template`, --dry-run and Argo CD see nothing); in production
mode nothing else (the render fails naming the value); in development a value derived from the release's
namespace and name (values.yaml `mode` says why not random). Never random: a render without lookup must give the
same value as the one before it. Call with (dict "root" $ "secret" "<Secret name>" "key" "<KEY>"
"value" <given> "name" "<value's name, for the message>" "shape" "<hex64|password|watermark>"
[ "alternative" "<the existingSecret value that can hold it>" ]).
*/}}
{{- define "cairn.keyValue" -}}
{{- $value := .value | default "" | toString -}}
{{- if not $value -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .secret -}}
{{- if and $existing $existing.data (hasKey $existing.data .key) -}}
{{- $value = index $existing.data .key | b64dec -}}
{{- else if include "cairn.production" .root -}}
{{- fail (printf "mode: production requires %s (%s): set it, or %s naming a Secret that holds it. The chart never makes up a key in production: one made at render time would differ on every `helm template` and leave everything sealed under the last one unreadable." .name .key (.alternative | default "existingSecret")) -}}
{{- else -}}
{{- $derived := printf "cairn-development-only/%s/%s/%s/%s" (toString .root.Values.development.keySeed) .root.Release.Namespace .root.Release.Name .key | sha256sum -}}
{{- if eq .shape "password" -}}
{{- /* A letter first: nats-server re-reads a $VARIABLE's value as a config token, so a password such as "2e7a…" would
       parse as a number and the server would refuse its configuration. */ -}}
{{- $value = printf "dev%s" (trunc 40 $derived) -}}
{{- else if eq .shape "watermark" -}}
{{- $value = printf "dev:%s" $derived -}}
{{- else -}}
{{- $value = $derived -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $value -}}
{{- end -}}

{{/*
A URL the world reaches (publicBaseUrl, ocspPublicUrl). In production: https on a public DNS name, as the services
check at start (CAIRN_ENV=production): not plain http, not loopback, localhost, a private or link-local address,
a single-label host or a cluster-local name. Call with (dict "name" "<value name>" "url" <url>).
*/}}
{{- define "cairn.assertPublicUrl" -}}
{{- $url := .url | default "" | toString -}}
{{- $parsed := urlParse $url -}}
{{- $host := lower (get $parsed "hostname") -}}
{{- $problem := "" -}}
{{- if ne (get $parsed "scheme") "https" -}}
{{- $problem = "is not https" -}}
{{- else if not $host -}}
{{- $problem = "has no host" -}}
{{- else if or (eq $host "localhost") (hasSuffix ".localhost" $host) (regexMatch `^127\.` $host) (eq $host "::1") (eq $host "0.0.0.0") -}}
{{- $problem = "names a loopback host" -}}
{{- else if or (regexMatch `^10\.` $host) (regexMatch `^172\.(1[6-9]|2[0-9]|3[01])\.` $host) (regexMatch `^192\.168\.` $host) (regexMatch `^169\.254\.` $host) (regexMatch "^f[cd][0-9a-f]{2}:" $host) (regexMatch "^fe80:" $host) -}}
{{- $problem = "names a private or link-local address" -}}
{{- else if regexMatch `(^|\.)(svc|cluster\.local|local|internal)$` $host -}}
{{- $problem = "names a cluster-local host (.svc, .cluster.local, .local, .internal)" -}}
{{- else if not (contains "." $host) -}}
{{- $problem = "names a single-label host" -}}
{{- end -}}
{{- if $problem -}}
{{- fail (printf "mode: production: %s %q %s; it is written into signed manifests and certificates and must be https on a public DNS name" .name $url $problem) -}}
{{- end -}}
{{- end -}}

{{/* Name of one service's headless Service, which resolves to every ready pod (callers round-robin over them). */}}
{{- define "cairn.headlessName" -}}
{{- printf "cairn-%s-headless" . -}}
{{- end -}}

{{/* The Secret of the services' NATS passwords, which the NATS server reads too. */}}
{{- define "cairn.natsSecretName" -}}
{{- default "cairn-nats-auth" .Values.nats.existingSecret -}}
{{- end -}}
