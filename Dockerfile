# syntax=docker/dockerfile:1
# The Paimon Commit Coordinator service image.
#   docker build -t paimon-coordinator:0.1.0 .        (from the repository root: the service wheel
#                                                       takes ../migrations in via hatchling force-include)
#   docker run -p 8080:8080 -e COORDINATOR_DATABASE_URL=postgresql://... paimon-coordinator:0.1.0

# --- builder: wheels of the three distributions and of every dependency ---------------------------
FROM python:3.11.15-slim-bookworm AS builder

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
COPY format/ format/
COPY client/ client/
COPY service/ service/
COPY migrations/ migrations/
COPY requirements/constraints.txt requirements/constraints.txt

# The three local projects in one call, so the pins on paimon-table-format==0.1.0 and
# paimon-coordinator-client==0.1.0 are satisfied by ./format and ./client rather than looked up on the
# index; every dependency at the tested version.
# The service with its `nats` extra: the image can publish commit events to NATS JetStream when configured.
RUN pip wheel --no-cache-dir --wheel-dir /wheels -c requirements/constraints.txt ./format ./client './service[nats]'

# --- runtime: install from the wheels only, run as an unprivileged user ----------------------------
FROM python:3.11.15-slim-bookworm

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

RUN groupadd --gid 10001 coordinator \
    && useradd --uid 10001 --gid coordinator --home-dir /app --no-create-home \
       --shell /usr/sbin/nologin coordinator \
    && mkdir -p /app /warehouse \
    && chown coordinator:coordinator /app /warehouse

# --no-index: the runtime stage never reaches a package index; everything comes from the builder.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels \
        'paimon-coordinator[nats]==0.1.0' paimon-coordinator-client==0.1.0 paimon-table-format==0.1.0

WORKDIR /app
USER 10001:10001

# COORDINATOR_DATABASE_URL defaults to sqlite:///./coordinator.db, i.e. /app/coordinator.db (owned by
# the user); set it to a postgresql:// URL for anything but a trial run. Bound to every interface, the
# service requires bearer tokens: create them with `coordinator tokens create`. (DL3064 mistakes the
# switch's name for a secret; no secret is set here.)
# hadolint ignore=DL3064
ENV COORDINATOR_HOST=0.0.0.0 \
    COORDINATOR_PORT=8080 \
    COORDINATOR_WAREHOUSE=/warehouse \
    COORDINATOR_REQUIRE_TOKENS=true

VOLUME ["/warehouse"]
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=4)"]

ENTRYPOINT ["coordinator"]
CMD ["serve"]
