"""Configuration: schema validation with defaults, and the experiment grid → shard specs."""

from __future__ import annotations

import itertools
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from dpbandits.errors import ConfigError
from dpbandits.instances.registry import GENERATORS, check_instance
from dpbandits.params import Param
from dpbandits.params import schema as param_schema
from dpbandits.policies import POLICIES, get_policy_class

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
EXPERIMENT_FAMILIES = ("glm", "linear", "ts")
OUTPUT_FOLDER_KEYS = ("results", "paper")
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/proc", "/sbin",
                "/sys", "/usr")
"""System folders no output may go in, at any depth."""
SYSTEM_FOLDERS = ("/", "/home", "/media", "/mnt", "/opt", "/root", "/run", "/srv", "/tmp", "/var")
"""System folders no output may be written straight into (their subfolders are allowed)."""
MAX_ROUND_ENTRIES = 10**8
"""Largest horizon × K × d of an instance (a GLM context table of 0.8 GB of float64)."""
APPEND_SUFFIX = "+"
"""An overlay key ending in `+` appends its list to the list of the key without it."""


@dataclass(frozen=True)
class Shard:
    """One simulation job: its output path (relative to the results folder) and its spec."""

    path: str
    spec: dict[str, Any]


def load_schema() -> dict[str, Any]:
    """The config schema with each algorithm's and each instance generator's declared
    parameters filled in (`dpbandits.params`): one declaration, no hand-kept copy."""
    schema = _copy(_schema_text())
    defs = schema["$defs"]
    defs["algorithm"]["properties"]["policy"]["enum"] = POLICIES.names()
    defs["algorithm"]["allOf"] = [
        {"if": {"properties": {"policy": {"const": name}}},
         "then": {"properties": {"params": param_schema(cls.parameters, False)}}}
        for name, cls in POLICIES.items()]
    instance = defs["experiment"]["properties"]["instance"]
    instance["properties"]["generator"]["enum"] = GENERATORS.names()
    instance["allOf"] = [
        {"if": {"properties": {"generator": {"const": name}}},
         "then": _without_required(param_schema(
             (*kind.parameters, Param("generator", name, "instance generator", ("string",))),
             False))}
        for name, kind in GENERATORS.items()]
    return schema


def _without_required(schema: dict[str, Any]) -> dict[str, Any]:
    """Instance keys may come from `instance_grid`: required keys are checked after merging."""
    return {k: v for k, v in schema.items() if k != "required"}


@lru_cache(maxsize=1)
def _schema_text() -> dict[str, Any]:
    with open(SCHEMA_PATH) as handle:
        return yaml.safe_load(handle)


def _with_defaults(validator_class: type) -> type:
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):  # noqa: ANN001
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub and name not in instance:
                    instance[name] = _copy(sub["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _copy(value: Any) -> Any:
    return yaml.safe_load(yaml.safe_dump(value))


def describe_error(error: jsonschema.ValidationError) -> str:
    """One line: where in the config, the bad value, and what is allowed."""
    where = "/".join(str(p) for p in error.absolute_path) or "<top level>"
    message = error.message
    if error.validator == "additionalProperties" and isinstance(error.schema, dict):
        allowed = sorted(error.schema.get("properties", {}))
        if allowed:
            message += f"; allowed: {', '.join(allowed)}"
    return f"config error at {where}: {message}"


def _reject_non_finite(value: Any, path: list[str]) -> None:
    """NaN and ±inf pass JSON-schema bounds (every comparison is false): refuse them here."""
    if isinstance(value, float) and not math.isfinite(value):
        where = "/".join(path) or "<top level>"
        raise ConfigError(f"config error at {where}: {value!r} is not allowed; must be a finite "
                          "number")
    if isinstance(value, dict):
        for key, item in value.items():
            _reject_non_finite(item, [*path, str(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _reject_non_finite(item, [*path, str(index)])


def merge(base: dict[str, Any], overlay: dict[str, Any], where: str = "") -> dict[str, Any]:
    """`overlay` on top of `base`: mappings merge key by key, other values replace, null removes,
    `key+: [...]` appends to the list `key`."""
    out = dict(base)
    for key, value in overlay.items():
        if isinstance(key, str) and key.endswith(APPEND_SUFFIX):
            # onto the list, or kept (`extends` may supply the list later: settle_appends)
            target = key[:-1] if key[:-1] in out else key
            out[target] = _appended(out.get(target), value, f"{where}{key}")
        elif value is None and key in out and isinstance(out[key], dict | list):
            del out[key]
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value, f"{where}{key}/")
        else:
            out[key] = value
    return out


def _appended(current: Any, extra: Any, where: str) -> list[Any]:
    """The list `current` (none: empty) with the list `extra` appended."""
    if not isinstance(extra, list) or not isinstance(current, list | None):
        got = extra if not isinstance(extra, list) else current
        raise ConfigError(f"config error at {where}: {got!r} is not allowed; `{where}` appends a "
                          f"list to the list {where[:-1]!r} (e.g. `algorithms+: [{{policy: "
                          "LinUCB}]`)")
    return [*(current or []), *extra]


def read_yaml(path: Path) -> Any:
    """A YAML file's content; a missing or invalid file is one ConfigError line."""
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        with open(path) as handle:
            return yaml.safe_load(handle)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML{_yaml_position(exc)}: "
                          f"{_yaml_problem(exc)}") from None


SNAKEMAKE_YAML_ERROR = "is not valid JSON or YAML"
"""What Snakemake says, naming neither file nor line, when a `--configfile` does not parse."""


def configfiles_in(argv: list[str]) -> list[str]:
    """The files a Snakemake command line passes with `--configfile(s)`, in order."""
    files: list[str] = []
    taking = False
    for arg in argv:
        if arg.startswith("--configfile"):
            name, _, value = arg.partition("=")
            taking = name in ("--configfile", "--configfiles") and not value
            if value:
                files.append(value)
        elif taking and arg.startswith("-"):
            taking = False
        elif taking:
            files.append(arg)
    return files


def configfile_error(argv: list[str]) -> str | None:
    """The one-line error of the first `--configfile` of a command line that is not valid YAML
    (file, line, column and problem), or None when they all parse."""
    for name in configfiles_in(argv):
        try:
            read_yaml(Path(name))
        except ConfigError as exc:
            return str(exc)
    return None


def _yaml_position(exc: yaml.YAMLError) -> str:
    """' at line L, column C' of a YAML error (1-based), or '' where the parser gave none."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return "" if mark is None else f" at line {mark.line + 1}, column {mark.column + 1}"


def _yaml_problem(exc: yaml.YAMLError) -> str:
    """What the YAML parser found wrong, on one line."""
    parts = [getattr(exc, "context", None), getattr(exc, "problem", None)]
    text = "; ".join(p for p in parts if p) or str(exc)
    return " ".join(text.split())


def _locate(name: str, origin: Path | None) -> Path:
    """A `base` file: absolute, next to the overlay, in the working folder or the repository."""
    candidates = [Path(name)]
    if origin is not None:
        candidates.append(origin.parent / name)
    candidates.append(REPO_ROOT / name)
    for path in candidates:
        if path.is_file():
            return path
    raise ConfigError(f"config error at base: {name!r} does not exist; must name a config file "
                      "(e.g. config/config.yaml)")


def resolve_overlays(config: dict[str, Any], origin: Path | None = None,
                     seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A config with `base: <file>` holds only what differs from that file (chains allowed);
    an experiment with `extends: <experiment>` holds only what differs from that one."""
    if "base" in config:
        path = _locate(str(config["base"]), origin).resolve()
        if path in seen:
            raise ConfigError(f"config error at base: {str(path)!r} includes itself")
        base = read_yaml(path)
        if not isinstance(base, dict):
            raise ConfigError(f"config file {str(path)!r} must be a mapping")
        base = resolve_overlays(base, path, (*seen, path))
        config = merge(base, {k: v for k, v in config.items() if k != "base"})
    experiments = config.get("experiments")
    if isinstance(experiments, dict):
        config = {**config, "experiments": {name: _extended(name, exp, experiments)
                                            for name, exp in experiments.items()}}
    return settle_appends(config) if not seen else config


def _extended(name: str, exp: Any, experiments: dict[str, Any], depth: int = 0) -> Any:
    if not isinstance(exp, dict) or "extends" not in exp:
        return exp
    parent = exp["extends"]
    if parent not in experiments or parent == name or depth > len(experiments):
        raise ConfigError(f"config error at experiments/{name}/extends: {parent!r} is not "
                          f"allowed; must name another experiment ({', '.join(experiments)})")
    base = _extended(parent, experiments[parent], experiments, depth + 1)
    return merge(base, {k: v for k, v in exp.items() if k != "extends"},
                 f"experiments/{name}/")


def settle_appends(value: Any) -> Any:
    """A `key+:` list with no list `key` under it becomes `key` (appended to nothing)."""
    if not isinstance(value, dict):
        return value
    out: dict[Any, Any] = {}
    for key, item in value.items():
        if isinstance(key, str) and key.endswith(APPEND_SUFFIX):
            out[key[:-1]] = [*out.get(key[:-1], []), *item]
        else:
            out[key] = [*settle_appends(item), *out[key]] if key in out else settle_appends(item)
    return out


def validate_config(config: dict[str, Any], origin: Path | None = None) -> dict[str, Any]:
    """Resolve overlays, validate against the schema and fill defaults (in place); one clear
    ConfigError line if bad."""
    if not isinstance(config, dict):
        raise ConfigError(f"config must be a mapping, got {type(config).__name__}")
    overlay = "base" in config
    resolved = resolve_overlays(config, origin)
    if resolved is not config:
        config.clear()
        config.update(resolved)
    _reject_non_finite(config, [])
    schema = load_schema()
    validator = _with_defaults(jsonschema.Draft202012Validator)(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        hint = ("; a config holding only what differs from the default starts with "
                "`base: config/config.yaml` (see config/examples/)"
                if not overlay and best.validator == "required" else "")
        raise ConfigError(describe_error(best) + hint)
    for key in OUTPUT_FOLDER_KEYS:
        check_output_folder(key, config[key])
    for name, exp in config["experiments"].items():
        _check_distinct_epsilons(name, exp)
    return config


def check_output_folder(key: str, value: str) -> None:
    """An output folder is a relative path inside the working directory, or an absolute path
    that is not a system folder; never an existing file."""
    path = Path(value)
    bad = not value.strip() or path.resolve() == Path.cwd()
    if not path.is_absolute():
        bad = bad or ".." in path.parts
    else:
        text = os.path.normpath(path)
        bad = bad or text in SYSTEM_FOLDERS or any(
            text == tree or text.startswith(f"{tree}/") for tree in SYSTEM_TREES)
    is_file = path.exists() and not path.is_dir()
    if bad or is_file:
        raise ConfigError(
            f"config error at {key}: {value!r} is not allowed{' (an existing file)' * is_file}; "
            "must be a folder inside the working directory (e.g. results/mine) or an absolute "
            "path outside the system folders")


def _check_distinct_epsilons(name: str, exp: dict[str, Any]) -> None:
    """An ε listed twice (4 and 4.0) would be one shard: refuse it."""
    lists = [(f"experiments/{name}/epsilons", exp.get("epsilons") or [])]
    lists += [(f"experiments/{name}/algorithms/{i}/epsilons", a.get("epsilons") or [])
              for i, a in enumerate(exp.get("algorithms", []))]
    for where, values in lists:
        seen = [float(v) for v in values]
        twice = sorted({v for v in seen if seen.count(v) > 1})
        if twice:
            raise ConfigError(f"config error at {where}: {values} is not allowed; "
                              f"{', '.join(format(v, 'g') for v in twice)} is listed twice; "
                              "each ε must appear once")


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a YAML config (an overlay if it names a `base`) and validate it (with defaults)."""
    path = Path(path)
    return validate_config(read_yaml(path), path)


def slug(text: str) -> str:
    """File-system safe name of a label."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("_")


def format_epsilon(epsilon: float | None) -> str:
    return "none" if epsilon is None else format(float(epsilon), "g")


def expand_algorithms(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Algorithm entries with `grid` expanded into one labelled entry per combination."""
    expanded = []
    for position, entry in enumerate(entries):
        base = entry.get("label", entry["policy"])
        grid = entry.get("grid") or {}
        keys = list(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            chosen = dict(zip(keys, values, strict=True))
            label = base
            if chosen:
                label += " [" + ", ".join(f"{k}={v}" for k, v in chosen.items()) + "]"
            expanded.append({
                "entry": position,
                "label": label,
                "grid_of": base,
                "policy": entry["policy"],
                "params": {**entry.get("params", {}), **chosen},
                "grid_params": chosen,
                "accounting": entry.get("accounting", "strict"),
                "epsilons": entry.get("epsilons"),
            })
    return expanded


def instance_grid(exp: dict[str, Any]) -> list[dict[str, Any]]:
    """Cartesian product of `instance_grid` merged into the base instance mapping."""
    grid = exp.get("instance_grid") or {}
    keys = list(grid)
    combos = []
    for values in itertools.product(*(grid[k] for k in keys)):
        combos.append({**exp["instance"], **dict(zip(keys, values, strict=True))})
    return combos


def _check_instance(name: str, index: int, inst: dict[str, Any]) -> None:
    try:
        _check_size(check_instance(inst))
    except ConfigError as exc:
        raise ConfigError(f"config error at experiments/{name}/instance (grid point {index}): "
                          f"{exc}") from None


def _check_size(inst: dict[str, Any]) -> None:
    """horizon × K × d within MAX_ROUND_ENTRIES, before any job allocates it."""
    sizes = [inst.get(k) for k in ("horizon", "K", "d")]
    if all(isinstance(v, int) for v in sizes) and math.prod(sizes) > MAX_ROUND_ENTRIES:
        horizon, arms, dim = sizes
        raise ConfigError(f"horizon × K × d = {math.prod(sizes):.3g} is not allowed (horizon = "
                          f"{horizon}, K = {arms}, d = {dim}); must be at most "
                          f"{MAX_ROUND_ENTRIES:.0e}")


def experiment_shards(name: str, exp: dict[str, Any]) -> list[Shard]:
    """Every shard of one experiment, in a stable order."""
    instances = instance_grid(exp)
    for index, inst in enumerate(instances):
        _check_instance(name, index, inst)
    algorithms = expand_algorithms(exp["algorithms"])
    folders: dict[str, dict[str, Any]] = {}
    for alg in algorithms:
        other = folders.setdefault(slug(alg["label"]), alg)
        if other is not alg:
            raise ConfigError(
                f"config error at experiments/{name}/algorithms: entries {other['entry']} "
                f"({other['label']!r}) and {alg['entry']} ({alg['label']!r}) make the same "
                f"shard folder {slug(alg['label'])!r}; give each a distinct label")
    trials = list(range(exp["trials"]))
    block = exp.get("trials_per_shard", 1)
    blocks = [trials[i:i + block] for i in range(0, len(trials), block)]
    root_seed = int(exp.get("seed", exp["instance"].get("seed", 0)))
    shards = []
    for alg in algorithms:
        cls = get_policy_class(alg["policy"])
        try:
            cls.check_params(alg["params"], alg["accounting"])
        except ConfigError as exc:
            raise ConfigError(f"config error at experiments/{name}/algorithms "
                              f"({alg['label']}): {exc}") from None
        if cls.private and not exp.get("epsilons"):
            raise ConfigError(f"config error at experiments/{name}/epsilons: algorithm "
                              f"{alg['label']} is private and needs a non-empty epsilon grid")
        epsilons = [float(e) for e in exp["epsilons"]] if cls.private else [None]
        if alg.get("epsilons") is not None:  # this algorithm runs only these ε of the grid
            where = f"config error at experiments/{name}/algorithms ({alg['label']}): epsilons"
            if not cls.private:
                raise ConfigError(f"{where} is not allowed; {alg['policy']} is not private")
            own = {float(e) for e in alg["epsilons"]}
            epsilons = [e for e in epsilons if e in own]
            if not epsilons:
                raise ConfigError(f"{where} = {alg['epsilons']} is not allowed; must share a "
                                  f"value with the experiment's epsilons {exp['epsilons']}")
        for eps, (index, inst), trial_block in itertools.product(
            epsilons, enumerate(instances), blocks
        ):
            path = (f"{name}/shards/{slug(alg['label'])}/eps~{format_epsilon(eps)}/"
                    f"inst~{index}/seeds~{trial_block[0]}-{trial_block[-1]}.h5")
            spec = {
                "experiment": name,
                "algorithm": alg["label"],
                "policy": alg["policy"],
                "params": alg["params"],
                "epsilon": eps,
                "delta": float(exp["delta"]),
                "accounting": alg["accounting"],
                "instance": inst,
                "instance_index": index,
                "trials": trial_block,
                "seed": root_seed,
            }
            shards.append(Shard(path, spec))
    return shards


def all_shards(config: dict[str, Any], group: str | None = None) -> dict[str, list[Shard]]:
    """Shards per experiment (optionally only the experiments of one group)."""
    out = {}
    for name, exp in config["experiments"].items():
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise ConfigError(f"experiment name {name!r} is not allowed; use letters, digits, _")
        if group is None or exp.get("group", "synthetic") == group:
            out[name] = experiment_shards(name, exp)
    return out


def grid_columns(config: dict[str, Any], experiment: str) -> dict[str, dict[str, Any]]:
    """label → {grid_of, grid params} for summary.csv columns."""
    exp = config["experiments"][experiment]
    return {a["label"]: {"grid_of": a["grid_of"], **{f"param_{k}": v for k, v in
                                                      a["grid_params"].items()}}
            for a in expand_algorithms(exp["algorithms"])}
