"""receipt-api: receipt upload and total extraction service."""

__version__ = "0.8.3"
