{{/* Names, labels and the checks that stop a render with a message naming the value. */}}

{{- define "reprieve.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "reprieve.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "reprieve.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "reprieve.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "reprieve.selectorLabels" -}}
app.kubernetes.io/name: {{ include "reprieve.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "reprieve.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "reprieve.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "reprieve.serviceAccountName" -}}
{{- default (include "reprieve.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "reprieve.tlsSecretName" -}}
{{- default (printf "%s-tls" (include "reprieve.fullname" .)) .Values.tls.secretName -}}
{{- end -}}

{{/* "true", "false" or "shadow", whether written as a YAML boolean or a string. */}}
{{- define "reprieve.events" -}}
{{- $events := toString .Values.events -}}
{{- if not (has $events (list "true" "false" "shadow")) -}}
{{- fail (printf "events must be true, false or shadow, not %q" $events) -}}
{{- end -}}
{{- $events -}}
{{- end -}}

{{/* The policy file's text: a mapping is written as YAML, a string as it is. */}}
{{- define "reprieve.policy" -}}
{{- if kindIs "string" .Values.policy -}}
{{- .Values.policy -}}
{{- else if .Values.policy -}}
{{- toYaml .Values.policy -}}
{{- end -}}
{{- end -}}

{{- define "reprieve.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.scheduler.leaderElection.enabled) -}}
{{- fail "replicas > 1 needs scheduler.leaderElection.enabled: true (two schedulers without it both bind the same pods)" -}}
{{- end -}}
{{- if and .Values.tls.certManager.enabled (not .Values.tls.enabled) -}}
{{- fail "tls.certManager.enabled needs tls.enabled: true" -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.certManager.enabled) (not .Values.tls.secretName) -}}
{{- fail "tls.enabled needs tls.secretName (an existing kubernetes.io/tls Secret with ca.crt) or tls.certManager.enabled: true" -}}
{{- end -}}
{{- if and .Values.tls.certManager.enabled (not .Values.tls.certManager.issuerRef.name) -}}
{{- fail "tls.certManager.enabled needs tls.certManager.issuerRef.name" -}}
{{- end -}}
{{- end -}}
