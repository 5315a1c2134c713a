#!/usr/bin/env python3
"""Writes the part of Codex's app-server JSON Schema that deputy implements, as the
fixture its schema test compares against:

    scripts/codex-app-server-schema.py PATH/TO/codex [OUT]

PATH/TO/codex is Codex CLI 0.125.0 (scripts/bench-vs-codex.sh installs it under
~/.cache/deputy-bench/codex). It runs `codex app-server generate-json-schema
--experimental`, keeps the methods named in deputy's committed schema bundle (and the
notifications deputy sends that Codex defines), and the definitions they reach.
Codex is Apache-2.0 (c) OpenAI; the generated schema is kept as data, for tests only.
"""

import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEPUTY_BUNDLE = ROOT / "crates/app-server/schema/app_server_protocol.schemas.json"
DEFAULT_OUT = ROOT / "crates/app-server/tests/fixtures/codex-app-server-schema.json"
KINDS = {
    # deputy's section: (Codex's union file, whether the message has a result)
    "clientRequests": ("ClientRequest.json", True),
    "serverNotifications": ("ServerNotification.json", False),
    "serverRequests": ("ServerRequest.json", True),
}


def main():
    codex = sys.argv[1]
    out = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_OUT
    version = subprocess.run([codex, "--version"], check=True, capture_output=True, text=True)
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as gen:
        subprocess.run(
            [codex, "app-server", "generate-json-schema", "--experimental", "--out", gen],
            check=True,
            capture_output=True,
            env={"CODEX_HOME": home, "PATH": "/usr/bin:/bin"},
        )
        gen = pathlib.Path(gen)
        deputy = json.loads(DEPUTY_BUNDLE.read_text())
        definitions = {}
        fixture = {
            "source": f"{version.stdout.strip()}: `codex app-server generate-json-schema "
            "--experimental`, cut to the methods deputy implements (Codex is Apache-2.0, "
            "(c) OpenAI; regenerate with scripts/codex-app-server-schema.py)",
        }
        for section, (union_file, has_result) in KINDS.items():
            params_of = {}
            for variant in json.loads((gen / union_file).read_text())["oneOf"]:
                method = variant["properties"]["method"]["enum"][0]
                ref = variant["properties"].get("params", {}).get("$ref", "")
                params_of[method] = ref.rsplit("/", 1)[-1]
            methods = {}
            for method in deputy[section]:
                if method not in params_of:
                    continue
                params = params_of[method]
                entry = {"params": add(gen, params, definitions)}
                if has_result:
                    entry["result"] = add(gen, params.replace("Params", "Response"), definitions)
                methods[method] = entry
            fixture[section] = methods
        fixture["definitions"] = dict(sorted(definitions.items()))
    out.write_text(json.dumps(fixture, indent=2, sort_keys=False) + "\n")
    print(f"wrote {out}", file=sys.stderr)


def add(gen, name, definitions):
    """Puts type `name` and what it reaches into `definitions`; returns a reference."""
    for candidate in (gen / "v2" / f"{name}.json", gen / f"{name}.json", gen / "v1" / f"{name}.json"):
        if candidate.exists():
            schema = json.loads(candidate.read_text())
            break
    else:
        raise SystemExit(f"Codex's schema has no {name}")
    own = schema.pop("definitions", {})
    schema.pop("$schema", None)
    for def_name, definition in list(own.items()) + [(name, schema)]:
        if definitions.setdefault(def_name, definition) != definition:
            raise SystemExit(f"Codex's schema defines {def_name} twice, differently")
    return {"$ref": f"#/definitions/{name}"}


if __name__ == "__main__":
    main()
