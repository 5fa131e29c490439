"""The ``omkl`` sub-commands, one module per command or command group (as dvc's ``commands/``)."""
