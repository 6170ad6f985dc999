#!/usr/bin/env bash
# Installs what the build and the tests need, only where it is missing:
#  - Debian packages listed in tools/apt-packages.txt (as root, or through sudo);
#  - the pinned npm oracles in tools/oracle (package.json + package-lock.json, `npm ci`): llama.cpp and ONNX Runtime.
# Safe to run again: it does nothing when everything is present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
while read -r pkg; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$here/apt-packages.txt"
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! command -v npm >/dev/null; then
  echo "setup: npm missing; installing Debian's npm"
  sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq npm
fi
# onnxruntime-node's install script would download CUDA/TensorRT libraries from NuGet; the CPU binary ships in
# the package (tools/oracle/.npmrc says the same for a plain `npm ci` there).
export ONNXRUNTIME_NODE_INSTALL=skip
for dir in "$here"/oracle; do
  if [[ -f "$dir/package-lock.json" ]]; then
    stamp="$dir/node_modules/.edgedecode-stamp"
    if [[ ! -f "$stamp" || "$dir/package-lock.json" -nt "$stamp" ]]; then
      echo "setup: npm ci in ${dir#$here/}"
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) && touch "$stamp"
    fi
  fi
done
