"""The console's panes, one per module; `lines.LinePane` is the base of the text panes."""
