"""Trading: the quoting strategy, the order executor, its venues and the engine commands."""
