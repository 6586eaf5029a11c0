# syntax=docker/dockerfile:1
#
# finsync: one static binary on a small non-root image.
#
#   docker build -t finsync:dev .
#   docker run --rm finsync:dev --help
#
# The runtime stage is debian-slim rather than distroless so that compose
# healthchecks can call curl against /readyz and /_sim/state.

# ---- build ------------------------------------------------------------------
# Keep the Go version equal to go.mod's `go` directive (a test checks it).
FROM golang:1.26.8-trixie AS build

WORKDIR /src
ENV CGO_ENABLED=0 \
    GOFLAGS=-buildvcs=false

# Dependencies first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download && go mod verify

COPY . .
RUN --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/finsync ./cmd/finsync

# ---- runtime ----------------------------------------------------------------
FROM debian:trixie-slim AS runtime

# ca-certificates for TLS to the providers, curl for container healthchecks.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 finsync \
    && useradd --system --uid 10001 --gid finsync --no-create-home \
       --home-dir /nonexistent --shell /usr/sbin/nologin finsync

COPY --from=build /out/finsync /finsync

USER 10001:10001
# API, provider simulator, ops endpoints (/livez, /readyz, /metrics).
EXPOSE 8080 8090 9090
ENTRYPOINT ["/finsync"]
CMD ["serve", "--addr", "0.0.0.0:8080", "--metrics-addr", "0.0.0.0:9090"]
