#!/usr/bin/env bash
# Installs, from Debian 12's archive, whatever of rocewatch's build, run and test needs is missing.
# Usage: scripts/deps.sh build|test
set -euo pipefail

build_pkgs=(
  meson ninja-build pkg-config g++
  libibverbs-dev libucx-dev libnl-3-dev libnl-route-3-dev
  nlohmann-json3-dev prometheus-cpp-dev libspdlog-dev libfmt-dev libtomlplusplus-dev
  libssl-dev libyaml-dev libcrypt-dev  # TLS and basic auth from the web config
  nettle-dev  # HMAC-SHA256: the TCP probe data port's handshake proves the token, never sends it
  zlib1g-dev  # gzip for /metrics
  liblldpctl-dev  # the switch and port on each link, from lldpd
  rdma-core ibverbs-providers iproute2 curl jq
  debhelper dpkg-dev scdoc python3  # the Debian package (debian/) and the man pages (man/)
)
test_pkgs=(
  libgtest-dev libgmock-dev libcpp-httplib-dev  # cpp-httplib: the tests' HTTP clients and fake servers
  prometheus prometheus-node-exporter prometheus-alertmanager python3 python3-yaml kmod cpio procps
  openssl  # test_e2e_tls's CA and certificates
  lldpd  # test_lldp_netns and the VM guests: two lldpd talking over real links
  clang-format  # scripts/check-format.sh
  lintian systemd man-db  # pkg_deb's lintian, systemd-analyze verify of the unit and its man pages
  clang libclang-rt-14-dev llvm  # scripts/fuzz.sh: clang++, libFuzzer and ASan runtimes, llvm-symbolizer
  # the QEMU test bed: Debian's own kernel has rdma_rxe and bonding; this host's may not
  qemu-system-x86 linux-image-amd64 busybox-static ibverbs-utils perftest iperf3 ucx-utils
)

want=("${build_pkgs[@]}")
[[ "${1:-build}" == test ]] && want+=("${test_pkgs[@]}")

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
