"""Market data apart from the venue that sends it: the frame parser, recordings and replay."""
