# The provider's manager image: built from this tree, run as a static binary
# on distroless/static as the non-root user 65532 (the manager Deployment
# requires non-root and a read-only root filesystem).
#   make docker-build REGISTRY=... IMAGE_NAME=... TAG=...
ARG GO_VERSION=1.26
FROM golang:${GO_VERSION} AS builder
WORKDIR /workspace
# Dependencies first, so a source change reuses the module download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG LDFLAGS=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w ${LDFLAGS}" -o /manager .

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
