"""`dumptui config`: dump configurations (acl.json, data_dump.json)."""

from __future__ import annotations

import argparse
import os
import sys

from dumptui.headless import (
    EXIT_OK,
)

NAME = "config"
DESCRIPTION = "Write a dump configuration: acl.json for an Ascend310 model, data_dump.json for MindSpore."


def add_arguments(p: argparse.ArgumentParser) -> None:
    kinds = p.add_subparsers(dest="kind", required=True, metavar="{acl,mindspore}")
    acl = kinds.add_parser("acl", help="acl.json with the model name read from a MindIR file")
    acl.add_argument("--mindir", required=True, help="the .mindir file the 310 model was built from")
    acl.add_argument("--dump-path", required=True, help="absolute folder the device dumps into (must exist)")
    acl.add_argument("--ops", nargs="+", default=[], metavar="OP", help="dump only these ops (default: all)")
    acl.add_argument("--mode", default="all", choices=("all", "input", "output"), help="dump_mode (default all)")
    acl.add_argument("-o", "--out", default="acl.json", help="where to write it (default ./acl.json)")
    ms = kinds.add_parser("mindspore", help="data_dump.json for MINDSPORE_DUMP_CONFIG")
    ms.add_argument("--kernels", nargs="*", default=[], metavar="NAME", help="full names (default: every kernel)")
    ms.add_argument("--path", required=True, help="absolute dump folder")
    ms.add_argument("--net-name", default="Net")
    ms.add_argument("--iteration", default="0", help='"0", "0|5-8" or "all" (default 0)')
    ms.add_argument(
        "--trans-flag",
        default="true",
        choices=("true", "false"),
        help="false keeps device layouts (dumptui reads both; default true)",
    )
    ms.add_argument("-o", "--out", default="data_dump.json", help="where to write it (default ./data_dump.json)")


def run(args: argparse.Namespace) -> int:
    from dumptui.core.tools import dumpconfig
    from dumptui.report.fmt import clean

    if args.kind == "acl":
        acl = dumpconfig.acl_config(args.mindir, args.dump_path, args.ops, args.mode)
        path = dumpconfig.write_json(args.out, acl.config)
        print(f"graph name: {clean(acl.graph_name)}\nmodel_name: {clean(acl.model_name)}\nwrote {clean(path)}")
        exists = "exists" if os.path.isdir(args.dump_path) else "does not exist yet: mkdir -p " + args.dump_path
        print(
            "warning: ACL writes no dump into a folder that does not exist: create it before the run"
            f" ({args.dump_path} {exists})",
            file=sys.stderr,
        )
        return EXIT_OK
    config = dumpconfig.mindspore_dump_config(
        args.kernels, args.path, args.net_name, args.iteration, args.trans_flag == "true"
    )
    path = dumpconfig.write_json(args.out, config)
    print(f"wrote {path}\nrun with: export MINDSPORE_DUMP_CONFIG={path}")
    return EXIT_OK
