"""The package's version, one place: tapes, reports, the client's `clientInfo` and `--version` read it here.

A fact module of its own (not the package's `__init__`, which is the public API's door) so that the
modules at the bottom of the layers name it without reaching up to the door.
"""

__version__ = "0.1.0"
