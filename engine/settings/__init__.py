"""The configuration a user edits: a TOML file, environment variables and command-line flags.

Precedence, lowest first: the built-in defaults (the engine configs' own defaults), the file
(`config.toml` in the per-user config directory, or `$HFT_CONSOLE_CONFIG`), environment variables
`HFT_CONSOLE_<SECTION>__<KEY>` (a sub-table adds a level, e.g.
`HFT_CONSOLE_RISK__SYMBOLS__BTCUSDT__MAX_POSITION`), then the command line's flags
(`Settings.with_overrides`).

`schema` holds what a user may set and builds the engine's configs from it; `keys` types a key,
`sources` says where a value came from and names it in errors, `layers` puts values on top of a
base, `reader` reads the file and the environment, `writer` writes the file.
"""
