"""Declared parameters: one declaration per policy or instance generator gives the defaults, the
validator (one clear error line), the JSON schema the config schema uses, and the listing.

A declaration is a tuple of `Param`s. `validate(owner, declaration, given)` returns every
parameter with its default filled in, or raises a ConfigError naming the key, the value and
what is allowed. Checks that involve several parameters or the problem (e.g. a vector of
length d) stay with their owner.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dpbandits.errors import ConfigError

TYPES = ("number", "integer", "boolean", "string", "numbers", "integers", "strings", "matrix",
         "mapping", "null")


class _Required:
    """The default of a parameter that must be given."""

    def __repr__(self) -> str:
        return "required"


REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Param:
    """One parameter: name, default, one-line doc, allowed types and values.

    `types` lists what the value may be: "number" (finite real), "integer", "boolean",
    "string", "numbers" (a list of finite reals), "integers" (a non-empty list of integers),
    "strings" (a list of strings), "matrix" (a list of equally long lists of finite reals),
    "mapping" and "null" (None: use a derived default). Numbers
    (and the items of "integers") may be bounded (`gt`, `ge`, `lt`, `le`); strings limited to
    `choices`. A parameter whose default is REQUIRED must be given.
    """

    name: str
    default: Any
    doc: str
    types: tuple[str, ...] = ("number",)
    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = set(self.types) - set(TYPES)
        if unknown:
            raise TypeError(f"parameter {self.name}: unknown type(s) {sorted(unknown)}")

    # ------------------------------------------------------------------ checking

    def accepts(self, value: Any) -> bool:
        """True when `value` is one of the allowed types and within the bounds."""
        return any(self._accepts_as(kind, value) for kind in self.types)

    def _accepts_as(self, kind: str, value: Any) -> bool:
        if kind == "null":
            return value is None
        if kind == "boolean":
            return isinstance(value, bool)
        if kind == "string":
            return isinstance(value, str) and (not self.choices or value in self.choices)
        if kind == "numbers":
            return isinstance(value, list | tuple) and all(_is_real(v) for v in value)
        if kind == "integers":
            return (isinstance(value, list | tuple) and len(value) > 0
                    and all(self._accepts_as("integer", v) for v in value))
        if kind == "strings":
            return isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        if kind == "matrix":
            return (isinstance(value, list | tuple) and len(value) > 0
                    and all(self._accepts_as("numbers", row) for row in value)
                    and len({len(row) for row in value}) == 1)
        if kind == "mapping":
            return isinstance(value, Mapping)
        if not _is_real(value) or (kind == "integer" and not float(value).is_integer()):
            return False
        return self._in_bounds(float(value))

    def _in_bounds(self, x: float) -> bool:
        return ((self.gt is None or x > self.gt) and (self.ge is None or x >= self.ge)
                and (self.lt is None or x < self.lt) and (self.le is None or x <= self.le))

    def allowed(self) -> str:
        """What is allowed, in words."""
        parts = []
        for kind in self.types:
            if kind in ("number", "integer"):
                word = "an integer" if kind == "integer" else "a finite number"
                bounds = " and ".join(b for b in (
                    f"> {_num(self.gt)}" if self.gt is not None else "",
                    f">= {_num(self.ge)}" if self.ge is not None else "",
                    f"< {_num(self.lt)}" if self.lt is not None else "",
                    f"<= {_num(self.le)}" if self.le is not None else "") if b)
                parts.append(f"{word} {bounds}".strip())
            elif kind == "boolean":
                parts.append("true or false")
            elif kind == "string":
                parts.append(", ".join(self.choices) if self.choices else "a string")
            elif kind == "numbers":
                parts.append("a list of numbers")
            elif kind == "integers":
                low = " >= " + _num(self.ge) if self.ge is not None else ""
                parts.append(f"a non-empty list of integers{low}")
            elif kind == "strings":
                parts.append("a list of strings")
            elif kind == "matrix":
                parts.append("a list of equally long lists of numbers")
            elif kind == "mapping":
                parts.append("a mapping")
            else:
                parts.append("null (derived default)")
        return "; or ".join(parts)

    # ------------------------------------------------------------------ schema

    def schema(self, with_default: bool = True) -> dict[str, Any]:
        """JSON schema of the parameter (for the config schema)."""
        options = []
        for kind in self.types:
            if kind in ("number", "integer"):
                s: dict[str, Any] = {"type": kind}
                for key, bound in (("exclusiveMinimum", self.gt), ("minimum", self.ge),
                                   ("exclusiveMaximum", self.lt), ("maximum", self.le)):
                    if bound is not None:
                        s[key] = bound
                options.append(s)
            elif kind == "string":
                options.append({"enum": list(self.choices)} if self.choices
                               else {"type": "string"})
            elif kind == "numbers":
                options.append({"type": "array", "items": {"type": "number"}})
            elif kind == "integers":
                item = {"type": "integer", **({"minimum": self.ge} if self.ge is not None else {})}
                options.append({"type": "array", "items": item, "minItems": 1})
            elif kind == "strings":
                options.append({"type": "array", "items": {"type": "string"}})
            elif kind == "matrix":
                options.append({"type": "array", "minItems": 1,
                                "items": {"type": "array", "items": {"type": "number"}}})
            elif kind == "mapping":
                options.append({"type": "object"})
            else:
                options.append({"type": kind})
        out = options[0] if len(options) == 1 else {"anyOf": options}
        out = {**out, "description": self.doc}
        if self.default is REQUIRED or not with_default:
            return out
        return {**out, "default": self.default}


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _num(value: float) -> str:
    return format(value, "g")


def number(name: str, default: Any, doc: str, *, nullable: bool = False, **bounds: float) -> Param:
    """A finite real parameter (optionally null for a derived default)."""
    return Param(name, default, doc, ("number", "null") if nullable else ("number",), **bounds)


def integer(name: str, default: Any, doc: str, *, nullable: bool = False,
            **bounds: float) -> Param:
    """An integer parameter (optionally null for a derived default)."""
    return Param(name, default, doc, ("integer", "null") if nullable else ("integer",),
                 **bounds)


def boolean(name: str, default: Any, doc: str, *, nullable: bool = False) -> Param:
    """A true/false parameter (optionally null for a derived default)."""
    return Param(name, default, doc, ("boolean", "null") if nullable else ("boolean",))


def choice(name: str, default: Any, doc: str, choices: Iterable[str], *,
           nullable: bool = False) -> Param:
    """A parameter taking one of a few names."""
    return Param(name, default, doc, ("string", "null") if nullable else ("string",),
                 choices=tuple(choices))


Declaration = tuple[Param, ...]


def with_defaults(declaration: Declaration, **new: Any) -> Declaration:
    """The same declaration with some defaults changed (a variant of a policy)."""
    missing = sorted(set(new) - {p.name for p in declaration})
    if missing:
        raise TypeError(f"with_defaults: no parameter(s) {missing}")
    return tuple(replace(p, default=new[p.name]) if p.name in new else p for p in declaration)


def defaults(declaration: Declaration) -> dict[str, Any]:
    """Every optional parameter's default."""
    return {p.name: p.default for p in declaration if p.default is not REQUIRED}


def validate(owner: str, declaration: Declaration, given: Mapping[str, Any], *,
             kind: str = "parameter", where: str | None = None) -> dict[str, Any]:
    """`given` checked against the declaration, defaults filled in; one ConfigError line if bad
    (`kind` and `where` word the unknown-key message, e.g. "instance key" for "glm_ball")."""
    by_name = {p.name: p for p in declaration}
    unknown = sorted(set(given) - set(by_name))
    if unknown:
        allowed = ", ".join(sorted(by_name)) or "none"
        raise ConfigError(f"unknown {kind}(s) {', '.join(unknown)} for {where or owner}; "
                          f"allowed: {allowed}")
    missing = [p.name for p in declaration if p.default is REQUIRED and p.name not in given]
    if missing:
        raise ConfigError(f"{where or owner} is missing {kind}(s): {', '.join(missing)}")
    out = defaults(declaration)
    for key, value in given.items():
        param = by_name[key]
        if not param.accepts(value):
            raise ConfigError(f"{owner}: {key} = {value!r} is not allowed; must be "
                              f"{param.allowed()}")
        if "integer" in param.types and "number" not in param.types and _is_real(value):
            value = int(value)
        out[key] = value
    return out


def schema(declaration: Declaration, with_defaults: bool = True) -> dict[str, Any]:
    """JSON schema of a parameter mapping: every key declared, nothing else allowed (without
    defaults where the schema fills a config: defaults stay with the declaration)."""
    out: dict[str, Any] = {"type": "object", "additionalProperties": False,
                           "properties": {p.name: p.schema(with_defaults) for p in declaration}}
    required = [p.name for p in declaration if p.default is REQUIRED]
    return {**out, "required": required} if required else out


def describe(declaration: Declaration) -> list[str]:
    """One line per parameter: name, default, allowed values, doc."""
    return [f"{p.name} = {p.default!r}  ({p.allowed()})  {p.doc}" for p in declaration]
