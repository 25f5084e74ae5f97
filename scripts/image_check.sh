#!/usr/bin/env bash
# Build the repository's Dockerfile with buildah and run the image, on a machine that cannot
# reach Docker Hub (`make image-check`; root; Debian; a few minutes; not part of `make test`).
#
# The Dockerfile's base, python:3.12-slim, comes from Docker Hub. Where that is unreachable (this
# project's sandbox reaches only PyPI, Debian and npm), this script builds a stand-in base: a
# Debian bookworm rootfs from debootstrap plus a CPython >= 3.12 of this machine (found by
# scripts/find_python.sh, copied at its own prefix), pip pointed at this machine's CA bundle. Then
# it builds the Dockerfile on it (`--build-arg PYTHON_IMAGE=...`) with chroot isolation (crun
# cannot create containers on a cgroups-v1/v2 hybrid host), and runs the image: `agentx
# --version`, the user id, and a short replay against serve-sim into /results.
# With Docker Hub reachable: `buildah bud -t agentx .` (or `docker build -t agentx .`) is all.
set -euo pipefail
cd "$(dirname "$0")/.."

work=${AGENTX_IMAGE_WORK:-/tmp/agentx-image-check}
base=localhost/agentx-check-base:latest
image=localhost/agentx:check

need() { command -v "$1" >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$2"; }; }
need buildah buildah
need debootstrap debootstrap

python=$(bash scripts/find_python.sh)
prefix=$("$python" -c 'import sys; print(sys.prefix)')
echo "image-check: stand-in base = debootstrap bookworm + $prefix"

rootfs=$work/rootfs
if [[ ! -x $rootfs/bin/sh ]]; then
    rm -rf "$rootfs"
    mkdir -p "$work"
    debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian
    cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
    chroot "$rootfs" /bin/sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libssl3 libffi8 libsqlite3-0 libbz2-1.0 liblzma5 zlib1g libreadline8 libncursesw6 libexpat1 libuuid1 ca-certificates'
fi
mkdir -p "$rootfs$prefix"
cp -a "$prefix/." "$rootfs$prefix/"
# the user the image runs as must reach the interpreter (pyenv keeps it under /root)
d=$prefix
while [[ $d != / ]]; do chmod o+rx "$rootfs$d"; d=$(dirname "$d"); done
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
ln -sf "$prefix/bin/python3" "$rootfs/usr/local/bin/python"

c=$(buildah from scratch)
buildah copy "$c" "$rootfs" / >/dev/null
buildah config --env "PATH=$prefix/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --env PIP_CERT=/etc/ssl/certs/ca-certificates.crt --env PIP_DEFAULT_TIMEOUT=180 "$c"
buildah commit -q "$c" "$base" >/dev/null
buildah rm "$c" >/dev/null

buildah bud --isolation chroot --network host --build-arg "PYTHON_IMAGE=$base" -t "$image" .

sim_log=$work/serve-sim.log
.venv/bin/agentx serve-sim --port 0 --fast >"$work/serve-sim.url" 2>"$sim_log" &
sim=$!
trap 'kill $sim 2>/dev/null || true' EXIT
for _ in $(seq 50); do [[ -s $work/serve-sim.url ]] && break; sleep 0.2; done
url=$(head -1 "$work/serve-sim.url")

c=$(buildah from "$image")
trap 'kill $sim 2>/dev/null || true; buildah rm "$c" >/dev/null 2>&1 || true' EXIT
user=$(buildah inspect --format '{{.OCIv1.Config.User}}' "$image")
entry=$(buildah inspect --format '{{.OCIv1.Config.Entrypoint}}' "$image")
[[ $user == 10001:10001 && $entry == "[agentx]" ]] || { echo "image-check: user $user, entrypoint $entry" >&2; exit 1; }
buildah run --isolation chroot "$c" -- agentx --version
[[ $(buildah run --isolation chroot "$c" -- id -u) == 10001 ]]
buildah run --isolation chroot "$c" -- agentx replay example --endpoint "$url" \
    --time-scale 0 --max-requests 5 -o /results/check --json >/dev/null
buildah run --isolation chroot "$c" -- ls /results/check
echo "image-check: $image built from the Dockerfile and ran agentx as uid 10001"
