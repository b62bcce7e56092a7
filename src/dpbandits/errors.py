"""Errors the user can act on: one line naming the bad value and what is allowed."""


class DPBanditsError(Exception):
    """Base class of every error the CLI turns into one clear line and a non-zero exit."""


class ConfigError(DPBanditsError, ValueError):
    """A configuration key, shard spec field or CLI flag has a value that is not allowed."""


class ShardError(DPBanditsError):
    """A shard file is missing, truncated, or does not follow the shard schema."""


class PrivacyBudgetError(DPBanditsError):
    """A strict-mode mechanism would spend more than its (ε, δ) budget."""
