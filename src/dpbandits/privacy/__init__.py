"""Privacy mechanisms and accounting."""

from dpbandits.privacy.ledger import LedgerEntry, PrivacyLedger, rho_to_epsilon

__all__ = ["LedgerEntry", "PrivacyLedger", "rho_to_epsilon"]
