# agentx in a container: the CLI as entrypoint, as a non-root user.
#   docker build -t agentx .
#   docker run --rm agentx --version
#   docker run --rm --network host -v "$PWD/results:/results" agentx \
#     replay example --endpoint http://127.0.0.1:8000 -o /results/run1
# examples/kubernetes runs it as an Indexed Job, one --shard per pod. Where Docker Hub is out of
# reach, `make image-check` (scripts/image_check.sh) builds and runs it with buildah.
ARG PYTHON_IMAGE=python:3.12-slim

# Build the wheel (the same one `pip install agentx-replay` installs).
FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml setup.py README.md LICENSE ./
COPY agentx ./agentx
COPY traces/example.parquet ./traces/example.parquet
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="agentx" \
      org.opencontainers.image.description="Capture coding-agent LLM traffic and replay it as load against inference servers" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 --user-group agentx \
    && mkdir -p /results \
    && chown agentx:agentx /results
USER 10001:10001
WORKDIR /home/agentx
# Results go under /results (mount a volume there); the API key comes from OPENAI_API_KEY.
VOLUME ["/results"]
ENTRYPOINT ["agentx"]
CMD ["--help"]
