#!/usr/bin/env python
"""Compile hloscope/xla/buffer_assignment.proto to the descriptor set the package loads
(hloscope/xla/buffer_assignment.desc). Needs grpcio-tools (protoc): pip install grpcio-tools.

    python scripts/gen_proto.py          # write the .desc
    python scripts/gen_proto.py --check  # exit 1 if the committed .desc is not the .proto's
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hloscope", "xla")


def compile_schema(out: str) -> None:
    from grpc_tools import protoc
    rc = protoc.main(["protoc", f"-I{HERE}", f"--descriptor_set_out={out}",
                      os.path.join(HERE, "buffer_assignment.proto")])
    if rc != 0:
        raise SystemExit(f"protoc failed with exit code {rc}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    target = os.path.join(HERE, "buffer_assignment.desc")
    if not args.check:
        compile_schema(target)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        fresh = os.path.join(tmp, "schema.desc")
        compile_schema(fresh)
        with open(fresh, "rb") as a, open(target, "rb") as b:
            same = a.read() == b.read()
    print("buffer_assignment.desc is " + ("up to date" if same else
                                          "stale: run python scripts/gen_proto.py"))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
