#!/usr/bin/env bash
# Runs deputy's benchmark next to Codex CLI 0.125.0's `codex mcp-server` (the last Codex
# release that has one), against the same mock model, and prints both tables.
#
#   scripts/bench-vs-codex.sh [deputy-bench options…]     e.g. --runs 3 --workload cold-start
#   scripts/bench-vs-codex.sh --deputy "$PWD/target/release/deputy" --runs 3   (no static build)
#   scripts/bench-vs-codex.sh --before /tmp/deputy-old --deputy "$PWD/target/release/deputy"
#                                                  (an earlier build's column first: before/after)
#
# Codex is installed from npm into ${XDG_CACHE_HOME:-~/.cache}/deputy-bench/codex once.
# Its npm package is a thin launcher; the native binary comes in a per-platform optional
# dependency, which this script runs directly (no node in the measured path).
set -euo pipefail

CODEX_VERSION=0.125.0
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/deputy-bench/codex"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) triple=x86_64-unknown-linux-musl ;;
  Linux-aarch64) triple=aarch64-unknown-linux-musl ;;
  *) echo "bench-vs-codex: no Codex binary is published for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

# Prints the installed binary's path, or nothing (never fails: on a fresh machine the cache
# directory does not exist yet, and a failing `find` would end the script under pipefail).
find_codex() {
  local dir="$cache/node_modules/@openai"
  [[ -d "$dir" ]] || return 0
  find "$dir" -type f -path "*/vendor/$triple/codex/codex" 2>/dev/null | head -n 1 || true
}

codex="$(find_codex)"
if [[ -z "$codex" ]] || [[ "$("$codex" --version 2>/dev/null)" != "codex-cli $CODEX_VERSION" ]]; then
  command -v npm >/dev/null || { echo "bench-vs-codex: npm is needed to install Codex" >&2; exit 1; }
  echo "bench-vs-codex: installing @openai/codex@$CODEX_VERSION into $cache" >&2
  mkdir -p "$cache"
  # --include=optional: the native binary is an optional dependency, which an
  # `omit=optional` npm setting would otherwise silently leave out.
  npm install --prefix "$cache" --no-audit --no-fund --include=optional \
    "@openai/codex@$CODEX_VERSION" >&2
  codex="$(find_codex)"
  if [[ -z "$codex" ]]; then
    echo "bench-vs-codex: npm installed @openai/codex but no native binary for $triple" \
      "under $cache/node_modules/@openai" >&2
    exit 1
  fi
fi
echo "bench-vs-codex: using $codex ($("$codex" --version))" >&2

cd "$root"
# With --deputy the given binary is measured (e.g. a plain `cargo build --release`, or an
# older build for a before/after table); otherwise the static build below.
case " $* " in
  *" --deputy "*|*" --deputy="*) ;;
  *) "$(dirname "$0")/build-release.sh" ;;
esac
exec cargo run --release -p deputy-bench -- --codex "$codex" "$@"
