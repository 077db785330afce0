# syntax=docker/dockerfile:1
# kubetrio's image: the manager of config/manager/manager.yaml (docker build -t kubetrio:latest .).
# The final stage installs the wheel with .ci/install-wheel, the script CI runs in a fresh
# virtualenv outside the checkout, so what CI proves is what this image does.

FROM python:3.12-slim AS builder
WORKDIR /src
COPY . .
# The project and every dependency as wheels: the final stage installs from them, offline.
RUN pip wheel --no-cache-dir --disable-pip-version-check --wheel-dir /wheels .

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/kubetrio/bin:$PATH
# Bind mounts keep the wheels and the script out of the image's layers.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    --mount=type=bind,source=.ci/install-wheel,target=/usr/local/bin/install-wheel \
    PIP_NO_INDEX=1 PIP_NO_CACHE_DIR=1 install-wheel /wheels /opt/kubetrio
# Non-root, numeric (runAsNonRoot can only verify a number); 65532 is distroless' nonroot.
USER 65532:65532
ENTRYPOINT ["kubetrio"]
CMD ["run"]
