"""Serving certificates: self-signed pairs that pass strict X.509 verification, server contexts
from PEM, and certificate files reloaded when they rotate."""
