"""The Textual console and the command line."""
