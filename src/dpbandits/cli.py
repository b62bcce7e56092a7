"""Command line: `dpbandits run | list | inspect | privacy <cmd> | audit`."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from dpbandits import __version__
from dpbandits.audit import cli as audit_cli
from dpbandits.errors import ConfigError, DPBanditsError
from dpbandits.privacy.commands import CALCULATORS
from dpbandits.registry import describe

DEFAULT_CONFIG = "config/config.yaml"


class OneLineParser(argparse.ArgumentParser):
    """argparse that reports a bad flag in one line (and exit code 2)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _load_spec(args: argparse.Namespace) -> dict:
    if args.spec:
        text = sys.stdin.read() if args.spec == "-" else _read(args.spec)
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"shard spec {args.spec!r} is not valid JSON: {exc}") from None
    from dpbandits.config import all_shards, load_config

    config = load_config(args.config)
    for shards in all_shards(config).values():
        for shard in shards:
            if shard.path == args.shard:
                return shard.spec
    raise ConfigError(f"shard {args.shard!r} is not in {args.config}; see `dpbandits list shards`")


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read {path!r}: {exc.strerror}") from None


def cmd_run(args: argparse.Namespace) -> int:
    from dpbandits.simulate import run_shard
    from dpbandits.storage import write_shard

    spec = _load_spec(args)
    out = Path(args.out)
    if out.suffix != ".h5":
        raise ConfigError(f"--out {str(out)!r} is not allowed; give a file path ending in .h5")
    if not out.parent.is_dir():
        raise ConfigError(f"--out folder {str(out.parent)!r} does not exist; create it first "
                          "(or give a file path in an existing folder)")
    try:
        with tempfile.NamedTemporaryFile(dir=out.parent, prefix=f".{out.name}.probe"):
            pass
    except OSError as exc:
        raise ConfigError(f"--out folder {str(out.parent)!r} is not writable: "
                          f"{exc.strerror}") from None
    data = run_shard(spec, progress=args.verbose)
    write_shard(out, data)
    print(f"{out}: {len(data.trials)} trial(s), final regret "
          + ", ".join(f"{v:.2f}" for v in data.final_regret))
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.what == "algorithms":
        from dpbandits.params import describe
        from dpbandits.policies import POLICIES, rule_name

        for name, cls in POLICIES.items():
            kind = "private" if cls.private else "non-private"
            print(f"{name}\t{kind}\t{','.join(cls.families)}")
            print(f"    decision rule: {rule_name(cls.decision_rule)}")
            print(f"    update: {rule_name(cls.update_rule)}")
            for line in describe(cls.parameters):
                print(f"    {line}")
    elif args.what == "instances":
        from dpbandits.instances.registry import GENERATORS
        from dpbandits.params import describe

        for name, kind in GENERATORS.items():
            print(f"{name}\t{kind.doc}")
            for line in describe(kind.parameters):
                print(f"    {line}")
    elif args.what == "outputs":
        from dpbandits.outputs import OUTPUTS

        print("\n".join(OUTPUTS.names()))
    else:
        from dpbandits.config import all_shards, load_config

        config = load_config(args.config)
        shards = all_shards(config)
        for name, exp in config["experiments"].items():
            if args.what == "experiments":
                print(f"{name}\t{exp['group']}\t{len(shards[name])} shards")
            else:
                for shard in shards[name]:
                    print(shard.path)
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from dpbandits.storage import read_shard

    shard = read_shard(args.shard)
    print(json.dumps({"spec": shard.spec, "instance": shard.instance, **shard.attrs},
                     indent=2, sort_keys=True, default=str))
    for trial, regret, reward, wall in zip(shard.trials, shard.final_regret,
                                           shard.final_reward, shard.wall_time, strict=True):
        print(f"trial {trial}: regret {regret:.4f}  reward {reward:.1f}  wall {wall:.2f}s")
    for name, values in sorted(shard.diagnostics.items()):
        print(f"{name}: " + ", ".join(f"{v:.6g}" for v in values))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="dpbandits", description=__doc__)
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)

    run = sub.add_parser("run", help="run one shard and write its HDF5 file")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--spec", help="shard spec as a JSON file ('-' for stdin)")
    source.add_argument("--shard", help="shard path relative to the results folder")
    run.add_argument("--config", default=DEFAULT_CONFIG, help="config used with --shard")
    run.add_argument("--out", required=True, help="output .h5 file")
    run.add_argument("-v", "--verbose", action="store_true")
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list algorithms, instances, outputs, experiments, shards")
    lst.add_argument("what", choices=["algorithms", "instances", "outputs", "experiments",
                                      "shards"])
    lst.add_argument("--config", default=DEFAULT_CONFIG)
    lst.set_defaults(func=cmd_list)

    ins = sub.add_parser("inspect", help="print a shard's spec and final numbers")
    ins.add_argument("shard")
    ins.set_defaults(func=cmd_inspect)

    privacy = sub.add_parser("privacy", help="privacy calculators")
    psub = privacy.add_subparsers(dest="privacy_command", required=True,
                                  parser_class=OneLineParser)
    for name, mod in CALCULATORS.items():
        p = psub.add_parser(name, help=describe(mod))
        mod.add_arguments(p)
        p.set_defaults(func=mod.main)

    audit = sub.add_parser("audit", help="empirical privacy audit of a mechanism or policy")
    audit_cli.add_arguments(audit)
    audit.set_defaults(func=audit_cli.main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DPBanditsError as exc:
        print(f"dpbandits: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `dpbandits list shards | head`: the reader stopped
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
