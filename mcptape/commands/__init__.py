"""The commands: one module per command, the only layer that reads options, prints and picks exit codes."""
