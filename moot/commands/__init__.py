"""The `moot` subcommands, one module per family; `moot.cli` registers them (see its docstring).

`flags` holds what they share (argument types, flag groups, files); each other module has a
`register(sub)` that adds its parsers and the handlers they dispatch to.
"""
