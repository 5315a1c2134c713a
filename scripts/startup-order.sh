#!/usr/bin/env bash
# Regenerates crates/cli/startup-order.txt: the functions of the `deputy` binary that a
# start of `deputy mcp-server` to `tools/list`, the per-command launcher and 64 concurrent
# turns with a command each execute, profile by profile. Release builds link
# them next to each other (see crates/cli/build.rs), so a start touches a few hundred
# kilobytes of code instead of pages spread over the whole binary.
#
#   scripts/startup-order.sh        (needs valgrind and python3; takes a few minutes)
#
# Names that later changes rename or remove are skipped by the linker; run this again when
# the start-up figures of `deputy-bench` drift up.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
command -v valgrind >/dev/null || { echo "startup-order: valgrind is needed" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The binary is built as users build it (`-p deputy-cli` alone): built together with the
# bench, its dependencies get other features, and so other symbol names, than the list
# must match.
cargo build --release --locked -p deputy-cli
mkdir "$work/bin"
cp "$root/target/release/deputy" "$work/bin/deputy"
deputy="$work/bin/deputy"
cargo build --release --locked -p deputy-bench

# deputy-bench starts the binary it is given; this one runs deputy under callgrind, only as
# a server or a launcher: the bench's `--version` probe (clap) is not part of a start, and
# in the list (profiles are read in file-name order, so by pid) it could come before one.
cat >"$work/deputy" <<EOF
#!/bin/sh
case "\$1" in
  mcp-server|__sandbox-exec)
    exec valgrind -q --tool=callgrind --demangle=no --callgrind-out-file=$work/%q{PROFILE}.%p "$deputy" "\$@" ;;
  *) exec "$deputy" "\$@" ;;
esac
EOF
chmod +x "$work/deputy"

# The bench's goals are not met under valgrind: its exit status says nothing here.
PROFILE=1-start "$root/target/release/deputy-bench" --deputy "$work/deputy" \
  --workload cold-start --runs 1 >/dev/null || true
for mode in danger-full-access workspace-write; do
  PROFILE=2-launcher "$work/deputy" __sandbox-exec --mode "$mode" --cwd /tmp \
    --writable-root /tmp --parent-pid $$ -- /bin/true || true  # confinement may stop valgrind
done
PROFILE=3-turns "$root/target/release/deputy-bench" --deputy "$work/deputy" \
  --workload concurrency --runs 1 >/dev/null || true

# Every function of deputy's own binary each profile names, first seen first.
python3 - "$work" >"$work/order.txt" <<'EOF'
import pathlib, re, sys

seen, order = set(), []
for profile in sorted(pathlib.Path(sys.argv[1]).glob("[0-9]-*.*")):
    objects, names, current, called = {}, {}, "", ""
    for line in profile.read_text(errors="replace").splitlines():
        if m := re.match(r"^(c?ob)=\((\d+)\)(?: (.*))?$", line):
            kind, key, name = m.groups()
            if name:
                objects[key] = name
            if kind == "ob":
                current = objects.get(key, "")
            else:
                called = objects.get(key, "")
        elif m := re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line):
            kind, key, name = m.groups()
            if name:
                names[key] = name
            name = names.get(key)
            binary = current if kind == "fn" else called
            if name and binary.endswith("/deputy") and name not in seen:
                seen.add(name)
                order.append(name)
print("\n".join(order))
EOF
functions=$(wc -l <"$work/order.txt")
if (( functions < 500 )); then
  echo "startup-order: only $functions functions recorded (did valgrind run?); list not replaced" >&2
  exit 1
fi
mv "$work/order.txt" crates/cli/startup-order.txt
echo "startup-order: $functions functions in crates/cli/startup-order.txt"
