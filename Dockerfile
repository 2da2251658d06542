# syntax=docker/dockerfile:1
#
# The gangsched operator image. Build from the repository root:
#   docker build -t ghcr.io/gangsched/gangsched:0.1.0 .
# .dockerignore limits the build context to what `pip install .` needs.

# --- build: install the package and its dependencies into a virtualenv ---------------------
FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/gangsched
WORKDIR /src
COPY . .
RUN /opt/gangsched/bin/pip install . \
 && /opt/gangsched/bin/python -m compileall -q /opt/gangsched

# --- runtime: the virtualenv on a clean base, no build tools, no source tree -----------------
FROM python:3.11-slim

LABEL org.opencontainers.image.title="gangsched" \
      org.opencontainers.image.description="A gang scheduler for Kubernetes" \
      org.opencontainers.image.licenses="Apache-2.0"

# A fixed, unprivileged user; manifests/deployment.yaml runs as the same UID/GID.
RUN groupadd --system --gid 65532 gangsched \
 && useradd --system --uid 65532 --gid 65532 --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin gangsched

COPY --from=build /opt/gangsched /opt/gangsched

# The root filesystem is read-only in the cluster: anything that wants a writable
# directory (HOME, caches) gets the /tmp emptyDir.
ENV PATH=/opt/gangsched/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp \
    MPLCONFIGDIR=/tmp/matplotlib

USER 65532:65532
# 8080: kopf liveness (/healthz); 9090: Prometheus metrics.
EXPOSE 8080 9090

ENTRYPOINT ["gangsched"]
CMD ["run"]
