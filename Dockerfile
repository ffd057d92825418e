# syntax=docker/dockerfile:1
# The image deploy/ runs: the rollout-forensics binary on distroless, as a non-root user.
#
#   docker build -t registry.example.com/rollout-forensics:0.1.0 .
#   docker push registry.example.com/rollout-forensics:0.1.0
#
# Replace registry.example.com with your registry, here and in deploy/ (or with kustomize's
# `images:`). The release workflow (.github/workflows/release.yml) builds the same image.

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p rollout-forensics \
    && cp target/release/rollout-forensics /usr/local/bin/rollout-forensics

# glibc and libgcc, nothing else: the binary needs no shell, and there is none to exploit.
FROM gcr.io/distroless/cc-debian12:nonroot AS runtime
COPY --from=build /usr/local/bin/rollout-forensics /usr/local/bin/rollout-forensics
# 65532, distroless's nonroot: the uid deploy/ runs as.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/rollout-forensics"]
