#!/bin/sh
# Regenerates the Go code for health_event.proto.
#
# The plugins are pinned so that a regeneration on any machine produces the
# checked-in files byte for byte: protoc-gen-go must match the
# google.golang.org/protobuf version in go.mod, and protoc-gen-go-grpc
# 1.6.x emits code that needs grpc >= 1.64 (go.mod has newer).
# Needs protoc (Debian: apt-get install protobuf-compiler) with the
# well-known types (google/protobuf/*.proto) on its include path.
set -eu

PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.2

here=$(cd "$(dirname "$0")" && pwd)

command -v protoc >/dev/null 2>&1 || {
	echo "generate.sh: protoc not found; install protobuf-compiler" >&2
	exit 1
}

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT

# GOFLAGS from the caller (e.g. -mod=vendor) must not leak into the
# installs, which resolve outside this module.
GOFLAGS='' GOBIN="$bin" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
GOFLAGS='' GOBIN="$bin" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

cd "$here"
PATH="$bin:$PATH" protoc \
	--proto_path=. \
	--go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative \
	health_event.proto
