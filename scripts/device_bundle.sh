#!/usr/bin/env bash
# Copies built binaries and the shared libraries they need beyond glibc/libstdc++ into
# .device/ (git-ignored), for running on a GPU machine that has CUDA but none of our
# Debian packages: there, run them with LD_LIBRARY_PATH=.device/lib.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .device && mkdir -p .device/bin .device/lib
for bin in "$@"; do
  cp "$bin" .device/bin/
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*) ;;  # glibc and the compiler runtime are there
      libcuda.so*|libnccl*|libcublas*) ;;  # so is the CUDA toolkit
      *) cp -n "$lib" .device/lib/ ;;
    esac
  done
done
# The Qwen3 tokenizer, for `troupe serve` on a checkpoint made of a config alone.
if [ -f models/demo/tokenizer.json ]; then
  mkdir -p .device/tokenizer
  cp models/demo/tokenizer.json models/demo/tokenizer_config.json .device/tokenizer/
fi
du -sh .device
