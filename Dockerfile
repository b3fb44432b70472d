# The dynamo-operator image for those who build with Docker or BuildKit.
# `make image` builds the same layout without a Docker daemon (tools/image):
# a static binary at /dynamo-operator on a distroless nonroot base, run as
# 65532:65532. Build: docker build --build-arg VERSION=0.1.0 -t ghcr.io/dynamoctl/dynamo-operator:0.1.0 .
FROM golang:1.26 AS build
ARG VERSION=dev
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/dynamoctl/dynamo-operator/operator/config.Version=${VERSION}" \
      -o /out/dynamo-operator ./operator/cmd/manager

FROM gcr.io/distroless/static:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="dynamo-operator" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/dynamoctl/dynamo-operator"
COPY --from=build /out/dynamo-operator /dynamo-operator
USER 65532:65532
ENTRYPOINT ["/dynamo-operator"]
