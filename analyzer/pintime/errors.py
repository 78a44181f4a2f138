"""The one exception type users see: its message is printed as a single line by the CLI."""


class PintimeError(Exception):
    """Bad input or an impossible request; ``str(err)`` is a complete one-line explanation."""
