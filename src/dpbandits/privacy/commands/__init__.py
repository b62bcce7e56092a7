"""`dpbandits privacy <name>` calculators: each module has add_arguments(parser) and main(args)."""

from __future__ import annotations

from types import ModuleType

from dpbandits.registry import Registry

CALCULATORS: Registry[ModuleType] = Registry("privacy calculator", {
    "shuffle": "dpbandits.privacy.commands.shuffle",
    "subsampled-gaussian": "dpbandits.privacy.commands.subsampled_gaussian",
    "zcdp": "dpbandits.privacy.commands.zcdp",
})
