{{/* The chart's name (nameOverride, else "gangsched"). */}}
{{- define "gangsched.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of every object: fullnameOverride, else the release name when it contains the
chart's name (helm install gangsched ... gives "gangsched", as manifests/ names them), else
RELEASE-gangsched.
*/}}
{{- define "gangsched.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gangsched.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object: those of manifests/, and Helm's own. */}}
{{- define "gangsched.labels" -}}
app.kubernetes.io/name: {{ include "gangsched.name" . }}
app.kubernetes.io/part-of: gangsched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ include "gangsched.chart" . }}
{{- end }}

{{/*
The operator's pods, as manifests/ selects them. The selector of a Deployment cannot change,
so it stays what the kustomize install uses.
*/}}
{{- define "gangsched.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gangsched.name" . }}
app.kubernetes.io/component: scheduler
{{- end }}

{{- define "gangsched.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gangsched.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name: name the existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gangsched.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/* Where the profile ConfigMap is mounted, and the file --profile reads. */}}
{{- define "gangsched.profilePath" -}}
/etc/gangsched/profile.yaml
{{- end }}
