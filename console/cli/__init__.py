"""`hft-console`: the command line, apart from the Textual console it starts."""
