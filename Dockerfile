# syntax=docker/dockerfile:1
# Build stage: release binary, with the dependency build cached in its own layer.
FROM rust:1-slim-bookworm AS build
WORKDIR /src
RUN apt-get update && apt-get install -y --no-install-recommends pkg-config && rm -rf /var/lib/apt/lists/*
COPY Cargo.toml Cargo.lock ./
# The mongodb driver, patched (vendor/README.md): a path dependency of Cargo.toml's [patch].
COPY vendor ./vendor
# Build the dependencies against stub sources first so that code changes do not rebuild them.
COPY scripts/docker-stubs ./scripts/docker-stubs
RUN sh scripts/docker-stubs \
    && cargo build --release --locked --bin grids3 \
    && rm -rf src
COPY src ./src
# The console's templates (compiled in by askama) and its embedded stylesheet and script.
COPY templates ./templates
COPY assets ./assets
RUN touch src/main.rs src/lib.rs && cargo build --release --locked --bin grids3

# Runtime stage: slim, non-root.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --no-create-home grids3
COPY --from=build /src/target/release/grids3 /usr/local/bin/grids3
USER grids3
ENV GRIDS3_LISTEN=0.0.0.0:9000
EXPOSE 9000 9001 9002
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:9000/_grids3/ready || exit 1
ENTRYPOINT ["grids3"]
