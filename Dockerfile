# reprieve: a kube-scheduler extender. Runs as a non-root user on a read-only root filesystem.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY extender extender
COPY policy policy
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
RUN useradd --uid 65532 --no-create-home --shell /usr/sbin/nologin reprieve
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels
USER 65532:65532
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 8888
ENTRYPOINT ["reprieve"]
CMD ["serve", "--bind", "0.0.0.0:8888", "--snapshot", "/etc/reprieve/cluster.yaml"]
