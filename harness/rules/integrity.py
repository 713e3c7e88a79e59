"""Integrity rules (IDs I1xx): catch candidates that get credit without computing the answer."""
