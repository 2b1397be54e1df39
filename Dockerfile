# syntax=docker/dockerfile:1
# watasu: build with `docker build -t watasu .`, run with a volume on /data.

# ---- build -----------------------------------------------------------------------------------
FROM rust:1-bookworm AS build
WORKDIR /src

# Dependencies alone first, so this layer is rebuilt only when Cargo.toml or Cargo.lock change.
COPY Cargo.toml Cargo.lock ./
RUN mkdir src benches \
 && echo 'fn main() {}' > src/main.rs \
 && echo 'fn main() {}' > benches/gc.rs \
 && touch src/lib.rs \
 && cargo build --release --locked \
 && rm -rf src

COPY src src
COPY templates templates
COPY static static
COPY migrations migrations
# Newer than the placeholder build, so cargo rebuilds watasu itself (templates, static files and
# migrations are compiled into the binary).
RUN touch src/main.rs src/lib.rs \
 && cargo build --release --locked \
 && install -D -m 0755 target/release/watasu /out/watasu

# ---- runtime ---------------------------------------------------------------------------------
FROM debian:bookworm-slim

# ca-certificates for SMTP over TLS; curl only for the health check.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*

RUN groupadd --gid 10001 watasu \
 && useradd --uid 10001 --gid watasu --home-dir /data --no-create-home \
      --shell /usr/sbin/nologin watasu \
 && mkdir -p /data \
 && chown watasu:watasu /data \
 && chmod 0700 /data

COPY --from=build /out/watasu /usr/local/bin/watasu

ENV WATASU_DATA_DIR=/data \
    WATASU_LISTEN=0.0.0.0:8080
VOLUME /data
EXPOSE 8080

USER watasu

# The port is taken from WATASU_LISTEN, so overriding it keeps the check right.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD curl -fsS -o /dev/null "http://127.0.0.1:${WATASU_LISTEN##*:}/healthz" || exit 1

ENTRYPOINT ["/usr/local/bin/watasu"]
CMD ["serve"]
